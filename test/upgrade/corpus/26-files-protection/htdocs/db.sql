<html><body>htdocs/db.sql</body></html>
