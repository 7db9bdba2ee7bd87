package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// Activation slots: a node activates (firmware reset or reboot) only while
// it holds one of its config's maxUnavailable slots. A slot is a Lease
// (coordination.k8s.io/v1) in the agent's namespace, named
// rdmaform-CONFIG-slot-N; its holderIdentity is the node. It is taken by
// creating the Lease (the API server refuses a second object of the same
// name) or by updating a free one with the resourceVersion it was read at
// (the API server refuses an update of an older version): of two agents
// racing for a slot exactly one wins, the other gets AlreadyExists or
// Conflict and tries the next slot. It is released by deleting the Lease,
// guarded by its UID and resourceVersion.
//
// A failed activation marks its Lease (annotation rdmaform.io/failed) and
// keeps it: while any slot of the config is marked, no node of the config
// takes a slot (stop the line). A person acts by fixing the node and
// deleting the Lease (kubectl -n NAMESPACE delete lease NAME): the node
// then tries again, and the others go on.
const (
	// LabelConfig on a slot's Lease names its config.
	LabelConfig = "rdmaform.io/config"
	// AnnotationPhase on a slot: taken (activation not started) or
	// activating (started: after a reboot, the agent checks it took).
	AnnotationPhase = "rdmaform.io/phase"
	// AnnotationFailed on a slot: why its node's activation failed.
	AnnotationFailed = "rdmaform.io/failed"

	phaseTaken      = "taken"
	phaseActivating = "activating"
)

// SlotName is the Lease of a config's slot i.
func SlotName(config string, i int) string {
	name := fmt.Sprintf("rdmaform-%s-slot-%d", config, i)
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(config))
	return fmt.Sprintf("rdmaform-%s-slot-%d", hex.EncodeToString(sum[:8]), i)
}

// configLabel is a config's name as a label value (at most 63 characters).
func configLabel(config string) string {
	if len(config) <= 63 {
		return config
	}
	sum := sha256.Sum256([]byte(config))
	return hex.EncodeToString(sum[:16])
}

// MaxUnavailable is how many slots a config has for n selected nodes: a
// number (at least 1), or a percentage of n rounded down, at least 1.
func MaxUnavailable(p v1alpha1.Policy, n int) (int, error) {
	if p.MaxUnavailable == nil {
		return 1, nil
	}
	v := *p.MaxUnavailable
	if v.Type == intstr.Int {
		if v.IntVal < 1 {
			return 0, fmt.Errorf("policy.maxUnavailable %d: want at least 1", v.IntVal)
		}
		return int(v.IntVal), nil
	}
	s, ok := strings.CutSuffix(v.StrVal, "%")
	var pct int
	if _, err := fmt.Sscanf(s, "%d", &pct); !ok || err != nil || fmt.Sprint(pct) != s || pct < 1 || pct > 100 {
		return 0, fmt.Errorf("policy.maxUnavailable %q: want a number or a percentage 1%%..100%%", v.StrVal)
	}
	return max(1, int(math.Floor(float64(n)*float64(pct)/100))), nil
}

// Slots takes and releases a config's slots for one node.
type Slots struct {
	C         client.Client
	Namespace string
	Holder    string
	Now       func() time.Time
}

// List returns the config's slot Leases, by name.
func (s *Slots) List(ctx context.Context, config string) ([]coordinationv1.Lease, error) {
	var l coordinationv1.LeaseList
	if err := s.C.List(ctx, &l, client.InNamespace(s.Namespace), client.MatchingLabels{LabelConfig: configLabel(config)}); err != nil {
		return nil, err
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// Held is the slot this node holds for the config, or nil.
func (s *Slots) Held(ctx context.Context, config string) (*coordinationv1.Lease, error) {
	ls, err := s.List(ctx, config)
	if err != nil {
		return nil, err
	}
	for i := range ls {
		if holder(&ls[i]) == s.Holder {
			return &ls[i], nil
		}
	}
	return nil, nil
}

// Stopped is the first slot of the config marked failed (the line is
// stopped), or nil.
func (s *Slots) Stopped(ctx context.Context, config string) (*coordinationv1.Lease, error) {
	ls, err := s.List(ctx, config)
	if err != nil {
		return nil, err
	}
	for i := range ls {
		if ls[i].Annotations[AnnotationFailed] != "" {
			return &ls[i], nil
		}
	}
	return nil, nil
}

// Take takes a free slot of the config's n, or returns nil when all are
// held. Each attempt is one create (AlreadyExists: someone else has it)
// or one update at the resourceVersion read (Conflict: someone else got
// there first); a slot taken is then confirmed against a lowered
// maxUnavailable (slotlimit.go).
func (s *Slots) Take(ctx context.Context, config string, n int) (*coordinationv1.Lease, error) {
	ls, err := s.List(ctx, config)
	if err != nil {
		return nil, err
	}
	// A slot marked failed keeps its node, cordoned (out of service),
	// for a person: it is one of the n. Under a rollout policy whose
	// stop rules let the line go on past a failure, the later waves
	// share what the failed nodes leave; with none left, no node takes
	// a slot until a person deletes a failed one. (Without a policy, a
	// failed slot stops the line before Take.)
	held := 0
	for i := range ls {
		if ls[i].Annotations[AnnotationFailed] != "" || holder(&ls[i]) != "" {
			held++
		}
	}
	if held >= n {
		return nil, nil
	}
	now := metav1.NewMicroTime(s.Now())
	me := s.Holder
	for i := 0; i < n; i++ {
		var l coordinationv1.Lease
		err := s.C.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: SlotName(config, i)}, &l)
		switch {
		case apierrors.IsNotFound(err):
			l = coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{
					Name: SlotName(config, i), Namespace: s.Namespace,
					Labels:      map[string]string{LabelConfig: configLabel(config)},
					Annotations: map[string]string{AnnotationPhase: phaseTaken},
				},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &me, AcquireTime: &now},
			}
			err := s.C.Create(ctx, &l)
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			return s.confirm(ctx, config, n, &l)
		case err != nil:
			return nil, err
		}
		if holder(&l) != "" {
			continue
		}
		l.Spec.HolderIdentity = &me
		l.Spec.AcquireTime = &now
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[AnnotationPhase] = phaseTaken
		err = s.C.Update(ctx, &l) // carries the resourceVersion read: optimistic
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return s.confirm(ctx, config, n, &l)
	}
	return nil, nil
}

// Annotate sets annotations on a held slot (resourceVersion-guarded).
func (s *Slots) Annotate(ctx context.Context, l *coordinationv1.Lease, kv map[string]string) error {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	for k, v := range kv {
		if v == "" {
			delete(l.Annotations, k)
		} else {
			l.Annotations[k] = v
		}
	}
	return s.C.Update(ctx, l)
}

// Release deletes a held slot, only if it is still the version read.
func (s *Slots) Release(ctx context.Context, l *coordinationv1.Lease) error {
	uid, rv := l.UID, l.ResourceVersion
	err := s.C.Delete(ctx, l, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
