<p>backup.sql</p>
