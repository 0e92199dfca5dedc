"""One module per group of parts; each part is a function (settings, args) that writes its
results/<part>.json."""
