["mstflint", "-i", "/tmp/fwcap/text.txt", "q"]
