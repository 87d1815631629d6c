package shard

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"
)

// Job describes a sharded run on Kubernetes: Shards generator pods of an
// Indexed Job, each running `headroom run` with Args as shard
// JOB_COMPLETION_INDEX of Shards, all starting the plan at StartAt.
type Job struct {
	// Name names the Job and its ConfigMap: a DNS label ("headroom-run").
	Name string
	// Namespace is the namespace; empty for kubectl's current one.
	Namespace string
	// Image is the generator image (the static headroom binary FROM
	// scratch; see fixtures.GeneratorImage).
	Image string
	// Shards is the number of generator pods.
	Shards int
	// Args are `headroom run`'s flags for every shard (-url, -rates, ...,
	// and -allow-remote for a target that is not on the pod's loopback:
	// the guard applies in every shard); the shard flags are added.
	Args []string
	// StartAt is the common start instant; it must leave time for the
	// pods to be scheduled and the image pulled.
	StartAt time.Time
	// CPU and Memory are each shard's requests and limits ("2", "1Gi");
	// GOMAXPROCS follows the CPU limit and GOMEMLIMIT is set from Memory.
	CPU, Memory string
	// Deadline bounds the Job's run (activeDeadlineSeconds), counted from
	// its creation.
	Deadline time.Duration
}

// The marker lines between which `headroom run -emit-result` prints a
// result on stdout, for ReadLogs.
const (
	BeginMarker = "----- BEGIN HEADROOM RESULT -----"
	EndMarker   = "----- END HEADROOM RESULT -----"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$`)

// Manifests returns the YAML documents of the run: a ConfigMap holding the
// start instant and the shard count, and an Indexed Job (completion index
// = shard index, completions = parallelism = Shards, no retries: a
// restarted shard would begin late; a failed shard fails its own index, not
// the Job's other pods) whose pods print their results to their logs,
// spread over nodes where possible.
func Manifests(j Job) ([]byte, error) {
	var errs []error
	if !dnsLabel.MatchString(j.Name) {
		errs = append(errs, fmt.Errorf("shard: job name %q is not a DNS label of at most 52 characters", j.Name))
	}
	if j.Image == "" {
		errs = append(errs, errors.New("shard: no generator image; build one (fixtures.GeneratorImage) and push it where the cluster pulls from"))
	}
	if j.Shards < 1 {
		errs = append(errs, fmt.Errorf("shard: %d shards; give at least 1", j.Shards))
	}
	if j.StartAt.IsZero() {
		errs = append(errs, errors.New("shard: no start instant"))
	}
	if j.CPU == "" || j.Memory == "" {
		errs = append(errs, errors.New("shard: give each shard's CPU and memory (requests = limits)"))
	}
	for _, a := range j.Args {
		switch a {
		case "-shard", "--shard", "-start-at", "--start-at", "-emit-result", "--emit-result":
			errs = append(errs, fmt.Errorf("shard: args carry %s; the manifest sets it", a))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": "headroom", "app.kubernetes.io/component": "generator", "headroom.dev/run": j.Name}
	meta := func() obj {
		m := obj{"name": j.Name, "labels": labels}
		if j.Namespace != "" {
			m["namespace"] = j.Namespace
		}
		return m
	}
	cm := obj{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(),
		"data": obj{"HEADROOM_START_AT": j.StartAt.UTC().Format(time.RFC3339Nano), "HEADROOM_SHARDS": strconv.Itoa(j.Shards)},
	}
	fromCM := func(env, key string) obj {
		return obj{"name": env, "valueFrom": obj{"configMapKeyRef": obj{"name": j.Name, "key": key}}}
	}
	args := append([]string{"run",
		"-shard", "$(SHARD_INDEX)/$(HEADROOM_SHARDS)", "-start-at", "$(HEADROOM_START_AT)", "-emit-result"}, j.Args...)
	res := obj{"cpu": j.CPU, "memory": j.Memory}
	container := obj{
		"name": "generator", "image": j.Image, "imagePullPolicy": "IfNotPresent",
		"args": args,
		"env": []obj{
			{"name": "SHARD_INDEX", "valueFrom": obj{"fieldRef": obj{"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
			fromCM("HEADROOM_SHARDS", "HEADROOM_SHARDS"),
			fromCM("HEADROOM_START_AT", "HEADROOM_START_AT"),
			{"name": "GOMEMLIMIT", "valueFrom": obj{"resourceFieldRef": obj{"resource": "limits.memory", "divisor": "1"}}},
		},
		"resources": obj{"requests": res, "limits": res},
		"securityContext": obj{
			"runAsNonRoot": true, "runAsUser": 65534, "allowPrivilegeEscalation": false,
			"readOnlyRootFilesystem": true, "capabilities": obj{"drop": []string{"ALL"}},
		},
	}
	job := obj{
		"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(),
		"spec": obj{
			"completionMode": "Indexed",
			"completions":    j.Shards,
			"parallelism":    j.Shards,
			// No retry (a restarted shard would begin late), and a failed
			// shard fails its index only: the others run on, and the
			// merge names the missing one.
			"backoffLimitPerIndex":  0,
			"maxFailedIndexes":      j.Shards,
			"activeDeadlineSeconds": int64(j.Deadline.Seconds()),
			"template": obj{
				"metadata": obj{"labels": labels},
				"spec": obj{
					"restartPolicy":                 "Never",
					"terminationGracePeriodSeconds": 30,
					"containers":                    []obj{container},
					"affinity": obj{"podAntiAffinity": obj{"preferredDuringSchedulingIgnoredDuringExecution": []obj{{
						"weight": 100,
						"podAffinityTerm": obj{
							"topologyKey":   "kubernetes.io/hostname",
							"labelSelector": obj{"matchLabels": obj{"headroom.dev/run": j.Name}},
						},
					}}}},
				},
			},
		},
	}
	if j.Deadline <= 0 {
		delete(job["spec"].(obj), "activeDeadlineSeconds")
	}
	var buf bytes.Buffer
	for i, doc := range []obj{cm, job} {
		b, err := yaml.Marshal(doc)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

type obj = map[string]any
