package agent

import "testing"

// TestSlotWatch: a node that waits on nothing lets no slot event through;
// one that waits on a config lets that config's through and no other's.
// A reconcile that ends waiting runs again when an event was filtered
// while it ran (it might have been the one it waits for), and not when
// none was, or when it ends waiting on nothing.
func TestSlotWatch(t *testing.T) {
	var w slotWatch
	if w.wants("a") || w.wants("") {
		t.Error("a node that waits on nothing let a slot event through")
	}
	m := w.mark()
	if again := w.set("a", m); again {
		t.Error("again after a reconcile during which nothing was filtered")
	}
	if !w.wants("a") || w.wants("b") {
		t.Error("waiting on a: want a's events and not b's")
	}
	m = w.mark()
	w.wants("b") // filtered while the reconcile runs
	if again := w.set("a", m); !again {
		t.Error("no again after a reconcile that ends waiting while an event was filtered")
	}
	m = w.mark()
	w.wants("b")
	if again := w.set("", m); again {
		t.Error("again after a reconcile that ends waiting on nothing")
	}
	if w.wants("a") {
		t.Error("a node that no longer waits let a slot event through")
	}
}
