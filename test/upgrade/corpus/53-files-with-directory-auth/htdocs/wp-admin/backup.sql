<p>admin backup.sql</p>
