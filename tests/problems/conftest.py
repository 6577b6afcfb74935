"""Markers the problem tests use, declared here as well as in pytest.ini so that --strict-markers accepts them
whichever file a checkout's pytest.ini is at."""


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "slow: takes a minute or more on 2 cores (the bench-size and every-grouping "
        "checks of tests/problems/test_audit.py)",
    )
