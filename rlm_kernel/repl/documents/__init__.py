"""Documents as context: each supported format's text extracted with where its pages, messages, cells or
records start (`extract.extract_file`), under caps for untrusted files (`caps`)."""
