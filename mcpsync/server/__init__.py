"""The server side: definitions, sessions, stdio serving."""
