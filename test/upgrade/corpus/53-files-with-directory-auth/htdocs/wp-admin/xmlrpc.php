<p>admin xmlrpc.php</p>
