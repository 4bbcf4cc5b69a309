package schemas

// Kinds of the objects an event subject names, after the cluster:
// clusters/<cluster>/<kind>/<namespace>/<name>. Writers and readers of
// events about one object use these, never their own spelling.
const (
	SubjectApplications = "applications"
	SubjectAppProjects  = "appprojects"
	SubjectRepositories = "repositories"
)

// Modes of an agent, as heartbeats report them (Heartbeat.Mode).
const (
	// ModeManaged: the hub is the source of truth. Local edits to the
	// Applications Argosy manages are reverted and reported; Applications
	// created in the cluster are left alone.
	ModeManaged = "managed"
	// ModeAutonomous: the cluster is the source of truth. Applications
	// created in the cluster are published to the hub as spoke-owned, and
	// the hub's events never overwrite or delete them; local edits are not
	// reverted.
	ModeAutonomous = "autonomous"
)
