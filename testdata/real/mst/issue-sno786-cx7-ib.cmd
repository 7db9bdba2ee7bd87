["mst", "status", "-v"]
