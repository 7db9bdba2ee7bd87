package agent

import "sync"

// slotWatch decides which slot events (a Lease of a config freed,
// deleted, or its failure mark changed) wake this node's agent: those of
// the config the node waits on, when its last reconcile left staged
// values waiting (for a slot, for a stopped line to be resumed) or an
// activation failed (a person deletes its Lease). A node in sync, or of
// another config, sleeps through them: without this, every slot a node
// frees woke every agent of the namespace, and a rollout of n nodes cost
// about n² reconciles.
//
// An event filtered while a reconcile runs could be the one a node that
// has just started to wait needed; the reconcile then asks to run again
// at once (again).
type slotWatch struct {
	mu       sync.Mutex
	config   string // "": the node waits on no slot
	filtered uint64 // slot events filtered so far
}

// wants tells whether a slot event of config wakes the agent.
func (w *slotWatch) wants(config string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if config != "" && config == w.config {
		return true
	}
	w.filtered++
	return false
}

// mark is the count of filtered events when a reconcile starts.
func (w *slotWatch) mark() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.filtered
}

// set records what the reconcile that started at mark left the node
// waiting on; again: it waits, and an event was filtered since mark.
func (w *slotWatch) set(config string, mark uint64) (again bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.config = config
	return config != "" && w.filtered != mark
}
