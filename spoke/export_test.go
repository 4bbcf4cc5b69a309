package spoke

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
