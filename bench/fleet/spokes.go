package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/sim"
	"github.com/argosyproj/argosy/spoke"
)

// envToken names the variable that hands a spoke pack the hub's admin
// token, which a flag would show to everyone on the machine.
const envToken = "ARGOSY_TOKEN"

// runSpokes is `fleet spokes`: one pack of simulated clusters, each a real
// spoke.Agent on a simulated Argo CD, joined through the hub's API, until
// SIGINT or SIGTERM.
func runSpokes(args []string) int {
	fs := flag.NewFlagSet("spokes", flag.ContinueOnError)
	var (
		hubURL    = fs.String("hub", "", "the hub's URL")
		hubKey    = fs.String("hub-key", "", "file of the hub's public key")
		brokers   = fs.String("kafka", "", "Kafka bootstrap address")
		topicPre  = fs.String("topic-prefix", "", "prefix of Argosy's topic names")
		prefix    = fs.String("prefix", "p0", "prefix of this pack's cluster names")
		clusters  = fs.Int("clusters", 100, "clusters in this pack")
		dir       = fs.String("dir", "", "directory for the clusters' keys")
		heartbeat = fs.Duration("heartbeat", 5*time.Second, "heartbeat interval")
		ramp      = fs.Duration("ramp", 0, "spread the agents' starts over this long")
		margin    = fs.Duration("clock-margin", 0, "the agents' clock margin; 0: the default")
		pprofAddr = fs.String("pprof", "", "serve Go's profiles on this address")
		racks     = fs.String("racks", "", "racks to spread the agents over, comma-separated (kgo.Rack); empty: none")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := spokes(ctx, spokeFlags{*hubURL, *hubKey, *brokers, *topicPre, *prefix, *dir, *pprofAddr, *racks, *clusters, *heartbeat, *ramp, *margin}, log); err != nil {
		log.Error("spoke pack failed", "err", err)
		return 1
	}
	return 0
}

type spokeFlags struct {
	hub, hubKey, brokers, topicPrefix, prefix, dir, pprof, racks string
	clusters                                                     int
	heartbeat, ramp, margin                                      time.Duration
}

func spokes(ctx context.Context, f spokeFlags, log *slog.Logger) error {
	hc, err := api.NewClient(f.hub, os.Getenv(envToken), nil)
	if err != nil {
		return err
	}
	var opts []spoke.Option
	if f.margin > 0 {
		opts = append(opts, spoke.WithClockMargin(f.margin))
	}
	key, err := events.LoadPublicKey(f.hubKey)
	if err != nil {
		return err
	}
	var racks []string
	if f.racks != "" {
		racks = strings.Split(f.racks, ",")
	}
	fleet, err := sim.NewFleet(sim.FleetConfig{Racks: racks, Clusters: f.clusters, Prefix: f.prefix, Hub: hc, HubKey: key,
		Conn: []kgo.Opt{kgo.SeedBrokers(seeds(f.brokers)...)}, Topics: events.DefaultTopics(f.topicPrefix), TopicPrefix: f.topicPrefix, Dir: f.dir,
		Heartbeat: f.heartbeat, Ramp: f.ramp, AgentOpts: opts, Log: log})
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	if f.pprof != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		srv := &http.Server{Addr: f.pprof, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		g.Go(func() error {
			if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("pprof: %w", err)
			}
			return nil
		})
		g.Go(func() error {
			<-gctx.Done()
			return srv.Close()
		})
	}
	g.Go(func() error { return fleet.Run(gctx) })
	return g.Wait()
}
