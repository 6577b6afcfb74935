"""Datasets: the problems, their prompt packs and the public results, exported from the database as JSONL and
Parquet in the layout the Hugging Face ``datasets`` library loads (``manage.py export_datasets``, ``/datasets/``)."""
