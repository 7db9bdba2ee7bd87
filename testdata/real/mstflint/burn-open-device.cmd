["mstflint", "-d", "0000:00:00.0", "-i", "/tmp/fwcap/zero.bin", "-y", "burn"]
