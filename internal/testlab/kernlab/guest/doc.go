// Package guest holds rdmaform's real-kernel tests. They are built with
// the kernlab tag and run only inside the QEMU guest that
// internal/testlab/kernlab/run.sh boots (make kernel-test), as root, on
// Debian's kernel with rdma_rxe, configfs and RDMA netlink.
package guest
