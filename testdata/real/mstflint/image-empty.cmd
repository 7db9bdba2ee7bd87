["mstflint", "-i", "/tmp/fwcap/empty.bin", "q"]
