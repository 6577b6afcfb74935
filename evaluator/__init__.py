"""Runs a solution against a problem on N rank processes and returns a JSON-serialisable result document.

Never imports Django: GPU hosts run this package alone.
"""
