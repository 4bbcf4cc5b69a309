package deploy_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/deploy"
)

// jmxExport is what the JMX exporter makes of one MBean attribute, written
// as it matches it, under rules: the first rule whose pattern matches
// (unanchored) names the metric; names and label names are lower-cased
// (lowercaseOutputName) and sanitized as the exporter does.
func jmxExport(t *testing.T, rules []deploy.JMXRule, attr string) (name string, labels map[string]string) {
	t.Helper()
	unsafe, group := regexp.MustCompile(`[^a-zA-Z0-9:_]+`), regexp.MustCompile(`\$(\d+)`)
	safe := func(s string) string { return unsafe.ReplaceAllString(s, "_") }
	for _, r := range rules {
		re, err := regexp.Compile("^.*(?:" + r.Pattern + ").*$")
		if err != nil {
			t.Fatalf("rule %q: %v", r.Pattern, err)
		}
		m := re.FindStringSubmatchIndex(attr)
		if m == nil {
			continue
		}
		// $1 is group 1 even before a letter or '_', as in Java.
		expand := func(tmpl string) string {
			return string(re.ExpandString(nil, group.ReplaceAllString(tmpl, "$${$1}"), attr, m))
		}
		labels = map[string]string{}
		for k, v := range r.Labels {
			labels[safe(expand(k))] = expand(v)
		}
		return strings.ToLower(safe(expand(r.Name))), labels
	}
	return "", nil
}

// TestJMXRules holds the brokers' metrics rules to the names Strimzi's
// dashboards and alerts use, for the attributes an operator of Argosy's
// Kafka watches.
func TestJMXRules(t *testing.T) {
	for _, c := range []struct {
		attr, name string
		labels     map[string]string
	}{
		{"kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value", "kafka_server_replicamanager_underreplicatedpartitions", nil},
		{"kafka.server<type=ReplicaManager, name=UnderMinIsrPartitionCount><>Value", "kafka_server_replicamanager_underminisrpartitioncount", nil},
		{"kafka.controller<type=KafkaController, name=OfflinePartitionsCount><>Value", "kafka_controller_kafkacontroller_offlinepartitionscount", nil},
		{"kafka.controller<type=KafkaController, name=ActiveControllerCount><>Value", "kafka_controller_kafkacontroller_activecontrollercount", nil},
		{"kafka.server<type=KafkaRequestHandlerPool, name=RequestHandlerAvgIdlePercent><>MeanRate", "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent", nil},
		{"kafka.network<type=SocketServer, name=NetworkProcessorAvgIdlePercent><>Value", "kafka_network_socketserver_networkprocessoravgidle_percent", nil},
		{"kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec, topic=argosy.config><>Count", "kafka_server_brokertopicmetrics_bytesin_total",
			map[string]string{"topic": "argosy.config"}},
		{"kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec><>Count", "kafka_server_brokertopicmetrics_messagesin_total", nil},
		{"kafka.network<type=RequestMetrics, name=RequestsPerSec, request=Produce, version=11><>Count", "kafka_network_requestmetrics_requests_total",
			map[string]string{"request": "Produce", "version": "11"}},
		{"kafka.network<type=RequestMetrics, name=TotalTimeMs, request=Produce><>99thPercentile", "kafka_network_requestmetrics_totaltimems",
			map[string]string{"request": "Produce", "quantile": "0.99"}},
		{"kafka.cluster<type=Partition, name=UnderMinIsr, topic=argosy.config, partition=3><>Value", "kafka_cluster_partition_underminisr",
			map[string]string{"topic": "argosy.config", "partition": "3"}},
		{"kafka.server<type=raft-metrics><>current-state: leader", "kafka_server_raftmetrics_current_state", map[string]string{"current_state": "leader"}},
		{"kafka.server<type=raft-metrics><>commit-latency-avg: 2.5", "kafka_server_raftmetrics_commit_latency_avg", nil},
		{"kafka.server<type=raft-metrics><>append-records-total: 7", "kafka_server_raftmetrics_append_records_total", nil},
	} {
		name, labels := jmxExport(t, deploy.JMXRules, c.attr)
		if c.labels == nil {
			c.labels = map[string]string{}
		}
		if name != c.name || !cmp.Equal(labels, c.labels) {
			t.Errorf("%s:\n got %s %v\nwant %s %v", c.attr, name, labels, c.name, c.labels)
		}
	}
	// The ConfigMap holds the same rules.
	b, err := deploy.JMXConfig()
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		LowercaseOutputName bool `json:"lowercaseOutputName"`
		Rules               []struct {
			deploy.JMXRule `json:",inline"`
			Value          *int `json:"value"`
		}
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil || !cfg.LowercaseOutputName || len(cfg.Rules) != len(deploy.JMXRules) {
		t.Fatalf("config %v %+v:\n%s", err, cfg, b)
	}
	for i, r := range cfg.Rules {
		if !cmp.Equal(r.JMXRule, deploy.JMXRules[i]) || (r.Type == "UNTYPED") != (r.Value != nil) {
			t.Errorf("rule %d: %+v, want %+v", i, r, deploy.JMXRules[i])
		}
	}
}

// TestExporterRegexes: the Kafka Exporter sees the install's topics and
// groups, and no other install's.
func TestExporterRegexes(t *testing.T) {
	k := deploy.DefaultKafka()
	k.TopicPrefix = "prod."
	topics, groups := regexp.MustCompile(k.ExporterTopicRegex()), regexp.MustCompile(k.ExporterGroupRegex())
	for name, want := range map[string]bool{"prod.argosy.config": true, "prod.argosy.deadletter": true, "argosy.config": false,
		"dev.argosy.config": false, "prodXargosy.config": false, "prod.argosy.config.old": false, "x.prod.argosy.config": false} {
		if topics.MatchString(name) != want {
			t.Errorf("topic %s: matched %v", name, !want)
		}
	}
	for name, want := range map[string]bool{"prod.argosy-projector": true, "prod.argosy-spoke.c1": true, "prod.argosy-reader.bi": true,
		"argosy-projector": false, "dev.argosy-spoke.c1": false, "prod.argosy-projector2": false, "prod.argosy-spoke.": false, "other": false} {
		if groups.MatchString(name) != want {
			t.Errorf("group %s: matched %v", name, !want)
		}
	}
}
