package k8s_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/headroom-dev/headroom/loadtest/shard"
)

// TestManifestsDecodeStrictly: the emitted manifests decode strictly (no
// unknown field) into the Kubernetes API types, as an Indexed Job whose
// completion index is the shard index, with the start instant and shard
// count from its ConfigMap, resources per shard and no retries.
func TestManifestsDecodeStrictly(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b, err := shard.Manifests(shard.Job{Name: "headroom-run", Namespace: "load", Image: "registry.example/headroom-generator:v1",
		Shards: 3, Args: []string{"-url", "http://target.load.svc:8080/", "-allow-remote", "-rates", "100,200"},
		StartAt: start, CPU: "2", Memory: "1Gi", Deadline: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("%d YAML documents, want a ConfigMap and a Job:\n%s", len(docs), b)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(docs[0], &cm); err != nil {
		t.Fatalf("ConfigMap: %v\n%s", err, docs[0])
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(docs[1], &job); err != nil {
		t.Fatalf("Job: %v\n%s", err, docs[1])
	}
	if cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || cm.Name != "headroom-run" || cm.Namespace != "load" ||
		cm.Data["HEADROOM_START_AT"] != "2026-12-01T12:00:00Z" || cm.Data["HEADROOM_SHARDS"] != "3" {
		t.Errorf("ConfigMap: %+v", cm)
	}
	spec := job.Spec
	if job.Kind != "Job" || job.APIVersion != "batch/v1" || job.Namespace != "load" {
		t.Errorf("Job's type or namespace: %s %s %s", job.APIVersion, job.Kind, job.Namespace)
	}
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion ||
		spec.Completions == nil || *spec.Completions != 3 || spec.Parallelism == nil || *spec.Parallelism != 3 ||
		spec.BackoffLimit != nil || spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex != 0 ||
		spec.MaxFailedIndexes == nil || *spec.MaxFailedIndexes != 3 || spec.ActiveDeadlineSeconds == nil || *spec.ActiveDeadlineSeconds != 1800 {
		t.Errorf("Job spec: %+v", spec)
	}
	pod := spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 {
		t.Fatalf("pod spec: %+v", pod)
	}
	if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil || len(pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("the shards are not spread over nodes: %+v", pod.Affinity)
	}
	c := pod.Containers[0]
	if c.Image != "registry.example/headroom-generator:v1" || c.Command != nil {
		t.Errorf("container image %q command %q", c.Image, c.Command)
	}
	want := []string{"run", "-shard", "$(SHARD_INDEX)/$(HEADROOM_SHARDS)", "-start-at", "$(HEADROOM_START_AT)", "-emit-result",
		"-url", "http://target.load.svc:8080/", "-allow-remote", "-rates", "100,200"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if f := env["SHARD_INDEX"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("SHARD_INDEX is not the completion index: %+v", env["SHARD_INDEX"])
	}
	for _, k := range []string{"HEADROOM_SHARDS", "HEADROOM_START_AT"} {
		if f := env[k].ValueFrom; f == nil || f.ConfigMapKeyRef == nil || f.ConfigMapKeyRef.Name != "headroom-run" || f.ConfigMapKeyRef.Key != k {
			t.Errorf("%s is not from the ConfigMap: %+v", k, env[k])
		}
	}
	if f := env["GOMEMLIMIT"].ValueFrom; f == nil || f.ResourceFieldRef == nil || f.ResourceFieldRef.Resource != "limits.memory" {
		t.Errorf("GOMEMLIMIT: %+v", env["GOMEMLIMIT"])
	}
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		if rl.Cpu().String() != "2" || rl.Memory().String() != "1Gi" {
			t.Errorf("resources %v, want cpu 2 and memory 1Gi", rl)
		}
	}
	if sc := c.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("security context: %+v", c.SecurityContext)
	}
	if job.Spec.Template.Labels["headroom.dev/run"] != "headroom-run" {
		t.Errorf("pod labels %v: kubectl logs -l headroom.dev/run=headroom-run would find nothing", job.Spec.Template.Labels)
	}
}

// TestManifestsRefuse: a manifest without image, resources or start, or
// whose args set the shard flags, is refused.
func TestManifestsRefuse(t *testing.T) {
	_, err := shard.Manifests(shard.Job{Name: "Bad_Name", Shards: 0, Args: []string{"-shard", "1/2"}})
	for _, want := range []string{"not a DNS label", "no generator image", "0 shards", "no start instant", "CPU and memory", "args carry -shard"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}
