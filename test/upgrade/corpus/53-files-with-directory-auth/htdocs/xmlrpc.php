<p>xmlrpc.php</p>
