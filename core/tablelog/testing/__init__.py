"""Reusable test suites for log-system plugins (import in your plugin's tests)."""
