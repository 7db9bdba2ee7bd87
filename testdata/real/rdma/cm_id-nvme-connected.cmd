["rdma","-j","resource","show","cm_id"]
