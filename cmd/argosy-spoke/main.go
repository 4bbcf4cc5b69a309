// Command argosy-spoke is Argosy's agent for one workload cluster. It never
// links github.com/argoproj/argo-cd/v2 (see spoke/deps_test.go).
package main

import (
	"os"

	"github.com/argosyproj/argosy/cmd/argosy-spoke/internal/cli"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

func main() { os.Exit(cmdkit.Main(cli.NewRoot)) }
