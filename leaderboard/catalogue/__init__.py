"""The problem catalogue as the site sees it: the registry mirrored into Problem rows (services) and the reads of
those rows (selectors) that every other room uses."""
