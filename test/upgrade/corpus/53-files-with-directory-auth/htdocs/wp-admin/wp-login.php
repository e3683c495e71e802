<p>admin wp-login.php</p>
