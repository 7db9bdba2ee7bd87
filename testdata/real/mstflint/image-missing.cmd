["mstflint", "-i", "/nonexistent/fw.bin", "q"]
