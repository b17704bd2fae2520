package porcupine

// chaos's timing harness for Porcupine (bench/bench_checkers.py versus copies it into a checkout
// of github.com/anishathalye/porcupine and builds it with `go test -c`): reads a chaos JSONL
// cas-register history of independent keys (CHAOS_HISTORY) and checks it with the etcd model of
// Porcupine's own tests (etcdModel, porcupine_test.go), partitioned by key. Call and return
// times are the lines' order; an :info op returns at MaxInt64 with an unknown output, as
// Porcupine's etcd test reads Jepsen's logs; a failed cas is an observed failed compare.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
	"time"
)

type chaosLine struct {
	Process int           `json:"process"`
	Type    string        `json:"type"`
	F       string        `json:"f"`
	Value   []interface{} `json:"value"`
}

type keyed struct {
	key int
	op  Operation
}

func TestChaosBench(t *testing.T) {
	path := os.Getenv("CHAOS_HISTORY")
	t0 := time.Now()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	sc.Scan() // header
	pending := map[int]int{} // process -> index into ops
	var ops []keyed
	pos := int64(0)
	for sc.Scan() {
		var l chaosLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		pos++
		key := int(l.Value[0].(float64))
		if l.Type == "invoke" {
			var in etcdInput
			switch l.F {
			case "read":
				in = etcdInput{op: 0}
			case "write":
				in = etcdInput{op: 1, arg1: int(l.Value[1].(float64))}
			case "cas":
				p := l.Value[1].([]interface{})
				in = etcdInput{op: 2, arg1: int(p[0].(float64)), arg2: int(p[1].(float64))}
			}
			pending[l.Process] = len(ops)
			ops = append(ops, keyed{key, Operation{ClientId: l.Process, Input: in, Call: pos}})
			continue
		}
		i := pending[l.Process]
		delete(pending, l.Process)
		op := &ops[i].op
		var out etcdOutput
		switch l.Type {
		case "ok":
			op.Return = pos
			out.ok = true
			if l.F == "read" {
				if l.Value[1] != nil {
					out.exists = true
					out.value = int(l.Value[1].(float64))
				}
			}
		case "fail":
			op.Return = pos
			out.ok = false // a failed compare
		case "info":
			op.Return = math.MaxInt64
			out.unknown = true
		}
		op.Output = out
	}
	byKey := map[int][]Operation{}
	for _, k := range ops {
		byKey[k.key] = append(byKey[k.key], k.op)
	}
	parts := make([][]Operation, 0, len(byKey))
	for _, p := range byKey {
		parts = append(parts, p)
	}
	history := make([]Operation, 0, len(ops))
	for _, p := range parts {
		history = append(history, p...)
	}
	model := etcdModel
	// each key's ops in one partition (contiguous in history)
	model.Partition = func(h []Operation) [][]Operation { return parts }
	t1 := time.Now()
	res := CheckOperations(model, history)
	t2 := time.Now()
	fmt.Printf("porcupine: %d ops, %d keys, parse %.3f s, check %.3f s, linearizable=%t\n",
		len(ops), len(parts), t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds(), res)
	if !res {
		t.Fatal("not linearizable")
	}
}
