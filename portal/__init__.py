"""The Django project: settings, URLs, accounts and API tokens, site-wide pages and commands."""
