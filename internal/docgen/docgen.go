// Package docgen writes the references in docs/reference from the code
// itself: the spec's fields from its Go types and JSON Schema, the
// commands from the cobra tree and rdmaform-agent's flags, the JSON
// documents from docs/json, the exit codes from the CLI's table and the
// Prometheus metrics from the audit's and the agent's tables. make docs
// (rdmaform-docs -reference) writes them; TestReferenceCurrent fails when
// a committed page is not what the code gives.
package docgen
