["mstflint", "-i", "/tmp/fwcap/zero.bin", "q"]
