["mstflint", "-i", "/tmp/fwcap", "q"]
