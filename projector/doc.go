// Package projector folds the event log into hub views (fleet state, audit
// history, deployment reports) with a pure Apply(view, event) and storage
// adapters at the edge. It reads events through package events only.
//
// It is empty until the projector issue lands; its place in the import
// graph (below hub and spoke, above events and schemas) is fixed now and
// enforced by depguard.
package projector
