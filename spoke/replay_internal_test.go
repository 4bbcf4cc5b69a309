package spoke

import (
	"testing"

	"github.com/argosyproj/argosy/projector"
)

// TestReplayRuleAgrees holds the agent's bound for telling a copy of an
// operation from the original to the projector's: an operation the agent
// rejects as a replay is one the projector refuses, so its rejection never
// stands in for the original's acknowledgement.
func TestReplayRuleAgrees(t *testing.T) {
	if replayAge != projector.OperationMaxAge {
		t.Errorf("the agent takes %s as the replay rule's operation age, the projector %s", replayAge, projector.OperationMaxAge)
	}
}
