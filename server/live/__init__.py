"""The live side: keyspace notifications and the site's own events, handed to open streams."""
