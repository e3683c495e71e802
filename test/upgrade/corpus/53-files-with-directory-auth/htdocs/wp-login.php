<p>wp-login.php</p>
