"""Problem contributions: contributors propose a problem folder through a form or the API, a worker checks it on
CPU, moderators review it and, on acceptance, download the folder as a zip to merge by pull request."""
