package spoke

import "context"

// The constructors of the agent's parts, which New assembles, for the
// tests of package spoke_test that run one part alone.
var (
	NewApplier     = newApplier
	NewBootstrap   = newBootstrap
	NewOffsets     = newOffsets
	NewGuard       = newGuard
	NewHeartbeater = newHeartbeater
	NewRecorder    = newRecorder
	NewReporter    = newReporter
)

// Operator returns the runner of the operations a queues (see operator).
func (a *Applier) Operator() (*Operator, error) { return a.operator() }

// Step moves the open operations on once, as Run does each time.
func (o *Operator) Step(ctx context.Context) (int, error) { return o.step(ctx) }

// Written is how many operations the Operator remembers it wrote whose
// record as started is not stored.
func (o *Operator) Written() int { return len(o.written) }
