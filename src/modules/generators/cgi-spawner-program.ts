// The CGI spawner's program, in Perl (cgi-spawner.ts starts it and talks to it): a small
// process that forks and executes CGI scripts for one serving process, so that the serving
// process, a large Node process, never forks itself.
//
// Why Perl: forking costs in proportion to the forking process's memory (page tables,
// copy-on-write faults), and Node's spawn adds its own stream set-up. Measured on the
// benchmark machine: Node's spawn('/bin/true') with three pipes costs about 1,270 µs of CPU
// per script in a 57 MB Node process (1,540 µs at 129 MB); a Perl loop of fork and exec of the
// same program about 133 µs. A small Node daemon would still be a ~50 MB process. perl-base is
// Essential on Debian, so the interpreter is always there; without it plume spawns from Node.
//
// The program reads itself from its stdin (`perl -`, up to __END__) and keeps that pipe: its
// end is the serving process's end, and the spawner's. Its environment's PLUME_CGI_SPAWNER
// gives the socket path to listen on (in a private 0700 directory) and a key in hex. It
// answers "ready\n" (or "error ERRNO\n") on its stdout once it listens.
//
// Connections, all on that socket; each starts with the 16-byte key, a 4-byte big-endian
// length and that many bytes of fields separated by NUL (the spawner reads exactly that much,
// so whatever follows is left for the script):
//   C                      the control connection (one): the spawner's reports go there
//   R seq file cwd argc argv... name=value...
//                          runs a script; this connection becomes its stdin and stdout, as
//                          httpd's cgid daemon hands its connection over, so the script's
//                          output goes to the serving process without passing through here.
// Reports on the control connection: a frame of one type byte, a 4-byte sequence number and a
// 4-byte length: 'X' the script could not be executed (payload: the errno, in decimal; sent
// before its 'e'), 'E' bytes of its stderr, 'e' the end of its stderr, 'x' its exit. The serving
// process sends 'K' (SIGTERM) and 'k' (SIGKILL) frames for scripts its requests gave up on.
//
// The script's process is set up as Node's spawn (libuv) sets one up: stdin, stdout and stderr
// as above and nothing else open (Perl opens every other descriptor close-on-exec), default
// signal dispositions and an empty signal mask, the working directory, exactly the
// environment given (in its order), argv as given; a failing chdir or exec is reported with
// its errno, as spawn reports it. The spawner waits for the exec (a close-on-exec pipe) as
// libuv does, so an exec failure is always known before anything else of that script.

export const SPAWNER_PROGRAM = String.raw`
use strict;
use Socket ();
use POSIX ();

# One word: tools that split /proc/PID/stat at spaces then read the right fields.
$0 = 'plume-cgi-spawner';
my ($sock_path, $key_hex, $execve) = split /\n/, (delete $ENV{PLUME_CGI_SPAWNER}) // '';
my $key = pack('H*', $key_hex // '');
# execve's system call number (Linux x86-64 or arm64), or none: exec through Perl's %ENV.
$execve = $execve ? $execve + 0 : 0;
my $MAX_REQUEST = 16 * 1024 * 1024;
my $DONTWAIT = Socket::MSG_DONTWAIT();
my $NOSIGNAL = Socket::MSG_NOSIGNAL();

# No signal is ignored (reports are sent with MSG_NOSIGNAL): the handlers below are reset by
# exec, so a script starts with every signal at its default without work in the child.
# Only so that a script's exit interrupts select().
$SIG{CHLD} = sub { };

sub quit {
  unlink $sock_path;
  (my $dir = $sock_path) =~ s{/[^/]*$}{};
  rmdir $dir;
  POSIX::_exit(0);
}
$SIG{TERM} = \&quit;
$SIG{HUP} = \&quit;
$SIG{INT} = \&quit;

my $listen;
unless (socket($listen, Socket::PF_UNIX(), Socket::SOCK_STREAM(), 0)
    && bind($listen, Socket::pack_sockaddr_un($sock_path)) && listen($listen, 511)) {
  syswrite(STDOUT, 'error ' . ($! + 0) . "\n");
  POSIX::_exit(1);
}
syswrite(STDOUT, "ready\n");
# Descriptor 1 stays taken (a script's own stdout is put there).
open(STDOUT, '>', '/dev/null');

my %conn;          # fileno => [handle, bytes]: connections whose request is incomplete
my $control;       # the control connection
my $cbuf = '';     # its bytes not yet parsed
my $out = '';      # reports to send at the end of this round
my %script;        # seq => { pid, err (handle), errdone, exited, since }
my %by_pid;        # pid => seq
my %by_err;        # fileno of a stderr pipe => seq

sub report { my ($type, $seq, $data) = @_; $data //= ''; $out .= pack('aNN', $type, $seq, length $data) . $data; }

sub flush_reports {
  return if $out eq '' || !$control;
  my $off = 0;
  while ($off < length $out) {
    my $n = send($control, $off ? substr($out, $off) : $out, $NOSIGNAL);
    if (!defined $n) { next if $!{EINTR}; quit(); }
    $off += $n;
  }
  $out = '';
}

sub finished { my ($seq) = @_; my $s = $script{$seq}; delete $script{$seq} if $s->{errdone} && $s->{exited}; }

# The script's process: fork, and in the child point stdin/stdout at the connection and stderr
# at a pipe, reset the signals, chdir, set the environment and exec.
sub run {
  my ($c, $seq, $file, $cwd, $argv, $env) = @_;
  my ($er, $ew, $sr, $sw, $pid, $argvp, $envp);
  # The argument and environment vectors for execve, made before the fork: the child, sharing
  # the spawner's pages copy-on-write until it execs, does as little as it can.
  if ($execve) { $argvp = pack('p*', @$argv, undef); $envp = pack('p*', @$env, undef); }
  unless (pipe($er, $ew) && pipe($sr, $sw) && defined($pid = fork)) {
    report('X', $seq, $! + 0); report('e', $seq); report('x', $seq);
    close $_ for grep { defined } $er, $ew, $sr, $sw, $c;
    return;
  }
  if ($pid == 0) {
    POSIX::dup2(fileno $c, 0); POSIX::dup2(fileno $c, 1); POSIX::dup2(fileno $sw, 2);
    if (chdir $cwd) {
      if ($execve) {
        syscall($execve, $file, $argvp, $envp);
        if ($! == 8) {
          # ENOEXEC: no #! line; the shell reads it, as execvp (and so Node's spawn) does.
          my $sh = '/bin/sh';
          my @sh = ($sh, $file, @$argv[1 .. $#$argv]);
          my $shp = pack('p*', @sh, undef);
          syscall($execve, $sh, $shp, $envp);
        }
      } else {
        %ENV = ();
        for my $e (@$env) { my $i = index($e, '='); $ENV{substr($e, 0, $i)} = substr($e, $i + 1); }
        { exec { $file } @$argv; }
      }
    }
    syswrite($ew, pack('N', $! + 0));
    POSIX::_exit(127);
  }
  close $ew; close $sw; close $c;
  # Until the exec (end of file: it ran) or its failure (the errno), as libuv waits.
  my ($got, $b);
  do { $got = sysread($er, $b, 4); } while (!defined $got && $!{EINTR});
  close $er;
  report('X', $seq, unpack('N', $b)) if $got && $got == 4;
  $script{$seq} = { pid => $pid, err => $sr, errdone => 0, exited => 0, since => 0 };
  $by_pid{$pid} = $seq;
  $by_err{fileno $sr} = $seq;
}

sub request {
  my ($c, $payload) = @_;
  my @f = split /\0/, $payload, -1;
  my $type = shift @f;
  if ($type eq 'C') {
    close $control if $control;
    $control = $c; $cbuf = '';
  } elsif ($type eq 'R' && @f >= 4) {
    my ($seq, $file, $cwd, $argc) = splice(@f, 0, 4);
    my @argv = splice(@f, 0, $argc);
    run($c, $seq, $file, $cwd, \@argv, \@f);
  } else {
    close $c;
  }
}

# Reads what has come of a request, never past its end.
sub read_request {
  my ($fd) = @_;
  my $e = $conn{$fd};
  for (;;) {
    my $have = length $e->[1];
    my $want = 20;
    if ($have >= 20) {
      my $len = unpack('N', substr($e->[1], 16, 4));
      if (substr($e->[1], 0, 16) ne $key || $len > $MAX_REQUEST) { delete $conn{$fd}; close $e->[0]; return; }
      $want += $len;
      if ($have == $want) {
        delete $conn{$fd};
        request($e->[0], substr($e->[1], 20));
        return;
      }
    }
    my $b;
    my $r = recv($e->[0], $b, $want - $have, $DONTWAIT);
    if (!defined $r) {
      return if $!{EAGAIN} || $!{EWOULDBLOCK} || $!{EINTR};
      delete $conn{$fd}; close $e->[0]; return;
    }
    if ($b eq '') { delete $conn{$fd}; close $e->[0]; return; }
    $e->[1] .= $b;
  }
}

sub read_control {
  my $n = sysread($control, $cbuf, 65536, length $cbuf);
  if (!defined $n) { return if $!{EINTR} || $!{EAGAIN}; quit(); }
  # The serving process closed it: it is going away (its scripts run on, as spawned ones would).
  quit() if $n == 0;
  while (length $cbuf >= 9) {
    my ($type, $seq, $len) = unpack('aNN', $cbuf);
    last if length $cbuf < 9 + $len;
    substr($cbuf, 0, 9 + $len, '');
    my $s = $script{$seq};
    next unless $s && !$s->{exited};
    kill('TERM', $s->{pid}) if $type eq 'K';
    kill('KILL', $s->{pid}) if $type eq 'k';
  }
}

sub read_stderr {
  my ($fd) = @_;
  my $seq = $by_err{$fd};
  my $s = $script{$seq};
  my $n = sysread($s->{err}, my $b, 65536);
  return if !defined $n && $!{EINTR};
  if ($n) { report('E', $seq, $b); return; }
  delete $by_err{$fd};
  close $s->{err};
  $s->{err} = undef;
  $s->{errdone} = 1;
  $s->{since} = time;
  report('e', $seq);
  finished($seq);
}

sub reap {
  while ((my $pid = waitpid(-1, POSIX::WNOHANG())) > 0) {
    my $seq = delete $by_pid{$pid};
    next unless defined $seq;
    $script{$seq}{exited} = 1;
    report('x', $seq);
    finished($seq);
  }
}

for (;;) {
  my $rin = '';
  vec($rin, 0, 1) = 1;
  vec($rin, fileno $listen, 1) = 1;
  vec($rin, fileno $control, 1) = 1 if $control;
  vec($rin, $_, 1) = 1 for keys %conn, keys %by_err;
  # A script whose stderr has ended exits at once, as a rule; its exit is looked for again
  # soon in case its SIGCHLD came just before select() began to wait.
  my $timeout;
  for my $s (values %script) {
    next if $s->{exited};
    my $t = $s->{errdone} && time - $s->{since} < 2 ? 0.005 : 1;
    $timeout = $t if !defined $timeout || $t < $timeout;
  }
  my $n = select(my $rout = $rin, undef, undef, $timeout);
  if ($n > 0) {
    if (vec($rout, 0, 1)) {
      my $r = sysread(STDIN, my $b, 4096);
      quit() if defined $r && $r == 0;
    }
    read_control() if $control && vec($rout, fileno $control, 1);
    for my $fd (keys %by_err) { read_stderr($fd) if vec($rout, $fd, 1); }
    for my $fd (keys %conn) { read_request($fd) if vec($rout, $fd, 1); }
    if (vec($rout, fileno $listen, 1) && accept(my $c, $listen)) {
      $conn{fileno $c} = [$c, ''];
      read_request(fileno $c);
    }
  }
  reap();
  flush_reports();
}
__END__
`;
