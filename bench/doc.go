// Package bench holds Argosy's end-to-end benchmarks against real servers:
// today the produce and consume throughput of signed 1 KiB events on a real
// Kafka broker. Micro-benchmarks live beside the code they measure; this
// package may import anything, and nothing imports it.
//
//	make bench
//	go test -run '^$' -bench . -count 6 ./bench/ | tee new.txt; benchstat old.txt new.txt
package bench
