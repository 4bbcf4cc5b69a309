package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// publicKeysFile is the file of public keys `argosy-spoke keygen --dir`
// writes (spoke.PublicKeysFile).
const publicKeysFile = "public.json"

// ClusterRegisterOptions are the flags and argument of `argosy cluster
// register`.
type ClusterRegisterOptions struct {
	IO    cmdkit.IOStreams
	Write apicmd.WriteFlags
	Name  string
	// Labels is --labels.
	Labels map[string]string
	// KeysFile is the public keys' file: --public-keys, or public.json in
	// --keys-dir; empty for none.
	KeysFile string
	// Partition is --partition; nil when not given.
	Partition *int32
	// Overwrite is --overwrite: change a registered cluster.
	Overwrite bool
	// IfGeneration is --if-generation; nil when not given.
	IfGeneration *int64
	// JoinTokenTTL is --join-token-ttl.
	JoinTokenTTL string
	// KeyOverlap is --key-overlap.
	KeyOverlap string
	// Manifests are --print-manifests and the flags that go with it.
	Manifests ManifestOptions
	// KeysDir is --keys-dir; empty with --public-keys.
	KeysDir string
}

// registerLong is the long help of argosy cluster register, before what
// every write command's help ends with.
const registerLong = `Register the cluster NAME with the hub, with its labels, on the config
topic. From then on the hub accepts writes for it.

Without keys, the hub answers with a one-time join token (printed once,
good for --join-token-ttl): the cluster's spoke proves it on first start
(argosy-spoke run --join-token … --hub-url …), makes its keys and registers
them. With the keys argosy-spoke keygen --dir DIR wrote to DIR/public.json
(--keys-dir DIR, or --public-keys FILE), they go to the trust topic at once,
for spokes given their keys (air-gapped setups). Either way, once the keys
are registered the hub seals repository credentials to the cluster's key,
and readers accept its status.

A cluster that is registered already is a conflict, so that a typo cannot
replace another cluster's registration: --overwrite changes it instead.
--overwrite reads the registration's generation first and writes only if
no one changed it in between; its labels become --labels (argosy cluster
label changes some and keeps the others), and its keys stay unless new ones
are given. New keys rotate the old ones out on the trust topic, in the same
transaction as the registration: from then on readers refuse what the old
keys sign, or after --key-overlap (say 10m, for the spoke to restart with
its new keys). A change that names no --partition keeps the cluster's pin.

--print-manifests prints, once the cluster is registered, what installs
its spoke with the Helm chart (docs/deploy.md): its Strimzi KafkaUser, to
apply where the Kafka runs, and, as comments above it, the commands that
copy the KafkaUser's certificate to the workload cluster and the helm
install command with the join token (or, with --keys-dir, the keys as a
Secret). The join URL is --hub-url, the hub as the workload cluster
reaches it; without it, the server this command calls, which is refused
before anything is registered when it is on this machine (a
port-forward). Nothing is printed for a dry run.

Registering needs an admin token.
`

const registerExample = `  argosy cluster register prod-eu --labels env=prod,region=eu      # prints a join token
  argosy-spoke keygen --cluster edge-7 --dir ./edge-7-keys
  argosy cluster register edge-7 --labels env=edge --keys-dir ./edge-7-keys
  argosy cluster register prod-eu --labels env=prod,region=eu,tier=1 --overwrite
  argosy cluster register edge-7 --labels env=edge --overwrite --keys-dir ./edge-7-keys-2 --key-overlap 10m
  argosy cluster register edge-7 --public-keys edge-7.json --partition 3 --dry-run

  # Register, and print the spoke's KafkaUser and the commands that install it
  argosy cluster register prod-eu --labels env=prod --print-manifests --hub-public-key hub.pub --hub-url https://argosy.example.com > prod-eu.yaml`

// NewCmdClusterRegister returns `argosy cluster register`. runF replaces
// the behaviour in tests.
func NewCmdClusterRegister(io cmdkit.IOStreams, runF func(context.Context, *ClusterRegisterOptions) error) *cobra.Command {
	opts := &ClusterRegisterOptions{IO: io}
	var keysDir string
	var partition int32
	var gen int64
	cmd := &cobra.Command{
		Use:     "register NAME --labels K=V,… [--keys-dir DIR]",
		Short:   "Register a cluster and its labels, with a join token or its public keys",
		Long:    registerLong + apicmd.WriteHelp,
		Example: registerExample,
		Args:    cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Write.Check(); err != nil {
				return err
			}
			opts.Name = args[0]
			if err := opts.parse(c, keysDir, partition, gen); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return clusterRegisterRun(c.Context(), opts)
		},
	}
	apicmd.AddWriteFlags(cmd, &opts.Write)
	f := cmd.Flags()
	f.StringToStringVar(&opts.Labels, "labels", nil, "the cluster's labels, K=V,K2=V2 (with --overwrite, all of them)")
	f.StringVar(&keysDir, "keys-dir", "", "the directory argosy-spoke keygen --dir wrote the cluster's keys to (its public.json is read)")
	f.StringVar(&opts.KeysFile, "public-keys", "", "the public keys file argosy-spoke keygen wrote (public.json)")
	f.Int32Var(&partition, "partition", 0, "pin the cluster to this config partition (default: the partitioner's choice)")
	f.BoolVar(&opts.Overwrite, "overwrite", false, "change the registration of a cluster registered already")
	f.StringVar(&opts.JoinTokenTTL, "join-token-ttl", "", "how long the join token is good, without keys (default 24h on the hub)")
	f.StringVar(&opts.KeyOverlap, "key-overlap", "", "with new keys for a registered cluster: how long its old keys stay valid (default 0s: not at all; at most 168h)")
	apicmd.AddGenerationFlag(cmd, &gen, "the registration")
	addManifestFlags(f, &opts.Manifests)
	return cmd
}

// addManifestFlags adds --print-manifests and the flags that go with it.
func addManifestFlags(f *pflag.FlagSet, m *ManifestOptions) {
	f.BoolVar(&m.Print, "print-manifests", false, "print the spoke's KafkaUser and the commands that install the spoke with Helm")
	f.StringVar(&m.KafkaName, "kafka-name", "argosy", "with --print-manifests: the Strimzi Kafka's name")
	f.StringVar(&m.KafkaNamespace, "kafka-namespace", "kafka", "with --print-manifests: the Strimzi Kafka's namespace")
	f.StringVar(&m.Bootstrap, "kafka-bootstrap", "", "with --print-manifests: the Kafka address the workload cluster reaches (default: the external listener's, read from the Kafka's status)")
	f.StringVar(&m.TopicPrefix, "topic-prefix", cmdkit.Env("ARGOSY_TOPIC_PREFIX", ""), "with --print-manifests: prefix of Argosy's topic names, which also begins the spoke's KafkaUser, its Secret and its group (env ARGOSY_TOPIC_PREFIX)")
	f.StringVar(&m.Namespace, "spoke-namespace", "argosy-spoke", "with --print-manifests: the spoke's namespace in the workload cluster")
	f.StringVar(&m.Chart, "chart", "./deploy/helm/argosy", "with --print-manifests: the Argosy chart, a path or a chart reference")
	f.StringVar(&m.HubKeyFile, "hub-public-key", "hub.pub", "with --print-manifests: the hub's public key file, from argosy-hub keygen")
	f.StringVar(&m.HubURL, "hub-url", "", "with --print-manifests: the hub's API as the workload cluster reaches it, for the spoke's join "+
		"(default: the server this CLI calls, unless that is on this machine)")
}

// parse checks the flags that depend on each other.
func (o *ClusterRegisterOptions) parse(c *cobra.Command, keysDir string, partition int32, gen int64) error {
	switch {
	case keysDir != "" && o.KeysFile != "":
		return &cmdkit.FlagError{Err: errors.New("give --keys-dir or --public-keys, not both")}
	case keysDir != "":
		o.KeysFile = filepath.Join(keysDir, publicKeysFile)
		o.KeysDir = keysDir
	}
	if o.Manifests.HubURL != "" {
		if u, err := url.Parse(o.Manifests.HubURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return &cmdkit.FlagError{Err: fmt.Errorf("--hub-url %q: want http(s)://HOST[:PORT]", o.Manifests.HubURL)}
		}
		o.Manifests.HubURL = strings.TrimSuffix(o.Manifests.HubURL, "/")
	}
	if o.Manifests.Print && o.KeysFile != "" && o.KeysDir == "" {
		return &cmdkit.FlagError{Err: errors.New("--print-manifests needs --keys-dir, not --public-keys: the spoke's Secret holds the whole directory")}
	}
	if c.Flags().Changed("partition") {
		if partition < 0 {
			return &cmdkit.FlagError{Err: fmt.Errorf("--partition %d: want a partition number, ≥ 0", partition)}
		}
		o.Partition = &partition
	}
	var err error
	o.IfGeneration, err = apicmd.ParseGeneration(c, gen)
	return err
}

func clusterRegisterRun(ctx context.Context, opts *ClusterRegisterOptions) error {
	req := api.ClusterRequest{Labels: opts.Labels, Partition: opts.Partition, ExpectedGeneration: opts.IfGeneration, JoinTokenTTL: opts.JoinTokenTTL, KeyOverlap: opts.KeyOverlap}
	if opts.KeysFile != "" {
		var err error
		if req.SigningKey, req.SealingKey, err = readPublicKeys(opts.KeysFile, opts.Name); err != nil {
			return err
		}
	}
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	joinURL := s.Client.BaseURL()
	if opts.Manifests.Print && opts.KeysDir == "" && !opts.Write.DryRun {
		// Checked before the registration: its join token is shown once.
		if joinURL, err = opts.Manifests.joinURL(joinURL); err != nil {
			return err
		}
	}
	if opts.Overwrite {
		cur, err := apicmd.Find(ctx, s.Client, api.KindClusters, opts.Name, "", opts.Name)
		if err != nil {
			return s.Explain(err)
		}
		if cur != nil && req.ExpectedGeneration == nil {
			req.ExpectedGeneration = &cur.Generation
		}
	}
	if req.ExpectedGeneration == nil {
		zero := int64(0)
		req.ExpectedGeneration = &zero
	}
	res, err := s.Write(ctx, nil, func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.RegisterCluster(ctx, opts.Name, req, o)
	})
	if err != nil {
		if !opts.Overwrite && opts.IfGeneration == nil {
			apicmd.SetHint(err, http.StatusConflict, fmt.Sprintf("to change its labels: argosy cluster register %s --labels … --overwrite, or argosy cluster label %s K=V", opts.Name, opts.Name))
		} else {
			apicmd.SetHint(err, http.StatusConflict, "the registration changed meanwhile: argosy cluster list shows it; run the command again")
		}
		return err
	}
	if opts.Manifests.Print {
		return printManifests(opts, res, joinURL)
	}
	if err := apicmd.PrintResult(opts.IO, opts.Write.Output, res); err != nil {
		return err
	}
	if res.JoinToken != "" && opts.Write.Output == "table" {
		fmt.Fprintf(opts.IO.Err, "\nJoin token for %s, shown once, good until %s:\n  %s\nOn the cluster, the spoke joins with it on first start:\n"+
			"  argosy-spoke run --cluster %s --join-token %s --hub-url %s --keys-dir DIR --hub-key hub.pub --kafka-brokers …\n",
			opts.Name, res.JoinTokenExpiresAt.Format(time.RFC3339), res.JoinToken, opts.Name, res.JoinToken, s.Client.BaseURL())
	}
	return nil
}

// printManifests prints the registration to standard error and the
// spoke's manifests to standard output.
func printManifests(opts *ClusterRegisterOptions, res *api.Result, hubURL string) error {
	errOut := opts.IO
	errOut.Out = opts.IO.Err
	if err := apicmd.PrintResult(errOut, opts.Write.Output, res); err != nil {
		return err
	}
	if opts.Write.DryRun {
		return nil
	}
	if res.JoinToken == "" && opts.KeysDir == "" {
		return errors.New("the hub issued no join token (the cluster has keys already): give --keys-dir to print manifests that install the spoke with its keys")
	}
	if res.JoinToken != "" {
		fmt.Fprintf(opts.IO.Err, "The manifests hold the one-time join token for %s, good until %s: keep them as you would a password.\n",
			opts.Name, res.JoinTokenExpiresAt.Format(time.RFC3339))
	}
	return writeManifests(opts.IO.Out, opts.Manifests, spokeInstall{cluster: opts.Name, hubURL: hubURL, joinToken: res.JoinToken, keysDir: opts.KeysDir})
}

// readPublicKeys reads the signing and sealing public keys of cluster from
// the file argosy-spoke keygen wrote.
func readPublicKeys(path, cluster string) (signing, sealing string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("the cluster's public keys: %w", err)
	}
	var keys []schemas.KeyRegistered
	if err := json.Unmarshal(b, &keys); err != nil {
		return "", "", fmt.Errorf("%s: not the public keys argosy-spoke keygen writes: %w", path, err)
	}
	for _, k := range keys {
		if k.Owner != cluster {
			return "", "", fmt.Errorf("%s: the keys are cluster %q's, not %q's: argosy-spoke keygen --cluster %s wrote them", path, k.Owner, cluster, k.Owner)
		}
		if raw, err := base64.StdEncoding.DecodeString(k.PublicKey); err != nil || len(raw) != 32 {
			return "", "", fmt.Errorf("%s: the %s key is not 32 bytes of standard base64", path, k.Purpose)
		}
		switch k.Purpose {
		case schemas.PurposeSigning:
			signing = k.PublicKey
		case schemas.PurposeSealing:
			sealing = k.PublicKey
		}
	}
	if signing == "" || sealing == "" {
		return "", "", fmt.Errorf("%s: want a signing and a sealing key, as argosy-spoke keygen writes them", path)
	}
	return signing, sealing, nil
}
