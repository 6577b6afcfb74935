"""The web room: server-rendered views, the REST API, the page cache, urls and template tags. Views and API views
are thin: each calls selectors to read and at most one service to write."""
