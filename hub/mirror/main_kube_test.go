//go:build integration

package mirror_test

import (
	"os"
	"testing"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
