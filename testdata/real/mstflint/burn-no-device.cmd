["mstflint", "-i", "/tmp/fwcap/zero.bin", "-y", "burn"]
