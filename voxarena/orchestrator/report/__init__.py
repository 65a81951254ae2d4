"""The report: report.json and report.html with their tables and plots."""
