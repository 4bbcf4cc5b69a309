// Package root is the argosy command's root: it wires each noun's commands
// (events, projector, fleet, cluster, app, project, repo, audit, report,
// replay, context), each a package of its own beside this one, login and logout,
// and the version command.
package root

import (
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/app"
	"github.com/argosyproj/argosy/cmd/argosy/internal/audit"
	"github.com/argosyproj/argosy/cmd/argosy/internal/auth"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cluster"
	"github.com/argosyproj/argosy/cmd/argosy/internal/contexts"
	"github.com/argosyproj/argosy/cmd/argosy/internal/dev"
	"github.com/argosyproj/argosy/cmd/argosy/internal/events"
	"github.com/argosyproj/argosy/cmd/argosy/internal/fleet"
	"github.com/argosyproj/argosy/cmd/argosy/internal/project"
	"github.com/argosyproj/argosy/cmd/argosy/internal/projector"
	"github.com/argosyproj/argosy/cmd/argosy/internal/replay"
	"github.com/argosyproj/argosy/cmd/argosy/internal/repo"
	"github.com/argosyproj/argosy/cmd/argosy/internal/report"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// NewRoot returns the argosy root command.
func NewRoot(io cmdkit.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "argosy",
		Short: "Argosy: an event-sourced control plane for fleets of Argo CD clusters",
		Long: `Argosy keeps the desired state of many Argo CD clusters in Kafka.

Every change is a signed CloudEvent on a Kafka topic; a hub appends changes,
an agent in each cluster applies its own, and projectors fold the log into
views. The cluster, app, project and repo commands change the fleet through
the hub's API; fleet, app status, audit and report read the views. See
docs/hub.md for the hub and docs/design.md for the topics and the event
catalogue.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(cmdkit.FlagErrorWithUsage)
	root.AddCommand(cmdkit.NewCmdVersion(io, "argosy", "table", nil), events.NewCmdEvents(io), projector.NewCmdProjector(io, nil),
		fleet.NewCmdFleet(io, nil), cluster.NewCmdCluster(io), app.NewCmdApp(io), project.NewCmdProject(io), repo.NewCmdRepo(io),
		audit.NewCmdAudit(io, nil), report.NewCmdReport(io), replay.NewCmdReplay(io), replay.NewCmdExport(io, nil),
		auth.NewCmdLogin(io, nil), auth.NewCmdLogout(io, nil), contexts.NewCmdContext(io), dev.NewCmdDev(io, nil))
	return root
}
