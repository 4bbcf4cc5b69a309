// Package projector folds the event log into hub views (fleet state, audit
// history, deployment records) with a pure Apply(view, event) over an
// in-memory working set, and storage adapters at the edge (package
// projector/sqlstore). Runner consumes the topics in a consumer group and
// commits each step's rows with its offsets in one store transaction.
// Package projector/read serves the views; projector/report computes
// deployment reports. It reads events through package events only.
package projector
