package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func metav1AddToGroupVersion(s *runtime.Scheme) { metav1.AddToGroupVersion(s, GroupVersion) }

// Mode says what an agent does with a plan.
type Mode string

const (
	// ModeAudit plans and reports (RDMAHostState), never changes the host.
	ModeAudit Mode = "audit"
	// ModeApply applies the plan, as rdmaform apply --yes does.
	ModeApply Mode = "apply"
)

// Activation says how staged firmware values may become current.
type Activation string

const (
	// ActivationNone leaves staged values pending (ActivationRequired).
	ActivationNone Activation = "none"
	// ActivationFWReset resets the cards' firmware (rdmaform activate --by fw-reset).
	ActivationFWReset Activation = "fw-reset"
	// ActivationReboot reboots the node (rdmaform activate --by reboot).
	ActivationReboot Activation = "reboot"
)

// HostSpec is an rdmaform spec (what rdmaform plan -f reads), kept as JSON.
// The agent validates it with the same code as the CLI and refuses it
// with the spec's path; the CRD's schema for it is generated from the
// spec's JSON Schema (schema/rdmaform.schema.json).
//
// +kubebuilder:validation:Type=object
type HostSpec struct {
	Raw []byte `json:"-"`
}

// MarshalJSON writes the spec as it is.
func (h HostSpec) MarshalJSON() ([]byte, error) {
	if len(h.Raw) == 0 {
		return []byte("null"), nil
	}
	return h.Raw, nil
}

// UnmarshalJSON keeps the spec as it is; it must be a JSON object.
func (h *HostSpec) UnmarshalJSON(b []byte) error {
	t := bytes.TrimSpace(b)
	if bytes.Equal(t, []byte("null")) {
		h.Raw = nil
		return nil
	}
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("hostSpec: want an object (an rdmaform spec), got %.20s", t)
	}
	if !json.Valid(t) {
		return fmt.Errorf("hostSpec: invalid JSON")
	}
	h.Raw = append([]byte(nil), t...)
	return nil
}

// Policy says how the spec is rolled out.
type Policy struct {
	// Mode: audit (plan and report only) or apply.
	// +kubebuilder:validation:Enum=audit;apply
	// +kubebuilder:default=audit
	// +optional
	Mode Mode `json:"mode,omitempty"`
	// Activation: how staged firmware values become current: none (they
	// stay pending: ActivationRequired), fw-reset or reboot, one node per
	// slot (maxUnavailable).
	// +kubebuilder:validation:Enum=none;fw-reset;reboot
	// +kubebuilder:default=none
	// +optional
	Activation Activation `json:"activation,omitempty"`
	// MaxUnavailable: how many selected nodes may be activating at once: a
	// number (at least 1) or a percentage of the selected nodes ("25%",
	// rounded down, at least 1). Default 1.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// Evict: evict the node's pods through the Eviction API after
	// cordoning it, before activation (DaemonSet and mirror pods stay).
	// +optional
	Evict bool `json:"evict,omitempty"`
	// Interval between two plans of a node when nothing changed (drift
	// checks), e.g. 5m. Default 5m.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Rollout: the rollout policy, the document `rdmaform waves --policy
	// FILE` and the Ansible rollout role read, with the same keys (hence
	// snake_case): a canary and a ramp, a bake between waves, stop rules
	// and compartments; maxUnavailable above is its max_unavailable. The
	// agent cuts the selected nodes into the same waves as rdmaform waves
	// (node labels rdmaform.io/domain, rdmaform.io/fabric,
	// rdmaform.io/roles and, for compartments, rdmaform.io/compartment),
	// and a node takes an activation slot only once every node of the
	// waves before its own is in sync or failed. Without it, nodes take
	// slots in any order and the first failed activation stops the line.
	// +optional
	Rollout *Rollout `json:"rollout,omitempty"`
	// Maintenance: who takes the node out of service for its activation:
	// agent (the agent cordons it and, with evict, evicts its pods) or
	// maintenance-operator (the agent requests a NodeMaintenance of
	// NVIDIA's maintenance operator, maintenance.nvidia.com/v1alpha1,
	// requestor rdmaform.io, which cordons and, with evict, drains the
	// node; the agent activates once it is Ready and deletes it after,
	// and the operator uncordons). Default agent.
	// +kubebuilder:validation:Enum=agent;maintenance-operator
	// +optional
	Maintenance Maintenance `json:"maintenance,omitempty"`
	// Gates: what a node must pass after its activation took, before it
	// is uncordoned (or its NodeMaintenance released).
	// +optional
	Gates *Gates `json:"gates,omitempty"`
}

// Maintenance says who cordons and drains a node for its activation.
type Maintenance string

const (
	// MaintenanceAgent: the agent cordons (and evicts) itself.
	MaintenanceAgent Maintenance = "agent"
	// MaintenanceOperator: NVIDIA's maintenance operator does, through a
	// NodeMaintenance the agent requests.
	MaintenanceOperator Maintenance = "maintenance-operator"
)

// Gates are checks between a node's activation and its return to
// service.
type Gates struct {
	// Probes: names of the hostSpec's probes (its probes list), typically
	// the bandwidth and latency kinds, that must pass after the
	// activation took. A node whose probe fails stays cordoned, its slot
	// marked failed (the stop rules count it), the probe's figures in
	// its state's probes; the agent runs them again at each reconcile and
	// returns the node to service once they pass. The peer each probe
	// names must answer (rdmaform probe serve with the same spec).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	Probes []string `json:"probes"`
}

// Rollout is a rollout policy (docs/guides/fleets-and-waves.md): the
// policy file's keys, checked by the same code as the file's.
type Rollout struct {
	// MaxPerDomain: at most this many nodes of one domain (label
	// rdmaform.io/domain) per wave. Default 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	MaxPerDomain *int32 `json:"max_per_domain,omitempty"`
	// Canary: the first wave's nodes (needs ramp). Default 1 with a ramp.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	Canary *int32 `json:"canary,omitempty"`
	// Bake: a wait after a wave before the next starts (whole seconds, at
	// most 24h), during which the wave's nodes must stay in sync.
	// +optional
	Bake *metav1.Duration `json:"bake,omitempty"`
	// Ramp: how the waves after the canary grow.
	// +optional
	Ramp *RolloutRamp `json:"ramp,omitempty"`
	// Stop: the stop rules.
	// +optional
	Stop *RolloutStop `json:"stop,omitempty"`
	// Compartments: node classes (the label rdmaform.io/compartment's
	// values) rolled one after the other, or side by side.
	// +optional
	Compartments *RolloutCompartments `json:"compartments,omitempty"`
}

// RolloutRamp is steps or factor.
type RolloutRamp struct {
	// Steps: each later wave's size, N nodes or P% of the selected
	// nodes (of a compartment's); the last step repeats.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Steps []intstr.IntOrString `json:"steps,omitempty"`
	// Factor: each wave the one before times this (more than 1, at most
	// 10), rounded up; a string ("2", "1.5").
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +optional
	Factor string `json:"factor,omitempty"`
}

// RolloutStop is the stop rules.
type RolloutStop struct {
	// FailedHosts: the line stops once this many nodes failed their
	// activation. Default 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	FailedHosts *int32 `json:"failed_hosts,omitempty"`
	// FailedPercent: the line stops when more than this percentage of
	// one wave's nodes failed.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=99
	// +optional
	FailedPercent *int32 `json:"failed_percent,omitempty"`
}

// RolloutCompartments are node classes rolled one after the other, or
// side by side.
type RolloutCompartments struct {
	// Order: sequential (each compartment's waves before the next's) or
	// parallel (side by side, the limits shared). Default sequential.
	// +kubebuilder:validation:Enum=sequential;parallel
	// +optional
	Order string `json:"order,omitempty"`
	// Groups: the compartments, values of the node label
	// rdmaform.io/compartment, in order; nodes in none come last.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Groups []string `json:"groups"`
}

// RDMAHostConfigSpec is which nodes get which spec, and how.
type RDMAHostConfigSpec struct {
	// NodeSelector selects the nodes (by their labels) this config is
	// for. A node selected by two configs gets neither (ConfigConflict).
	NodeSelector metav1.LabelSelector `json:"nodeSelector"`
	// HostSpec is the rdmaform spec of the selected nodes.
	HostSpec HostSpec `json:"hostSpec"`
	// Policy: audit or apply, activation, maxUnavailable.
	// +optional
	Policy Policy `json:"policy,omitempty"`
}

// RDMAHostConfig is an rdmaform spec for the nodes its selector selects.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=rhc
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.policy.mode`
// +kubebuilder:printcolumn:name="Activation",type=string,JSONPath=`.spec.policy.activation`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RDMAHostConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RDMAHostConfigSpec `json:"spec"`
}

// RDMAHostConfigList is a list of RDMAHostConfig.
//
// +kubebuilder:object:root=true
type RDMAHostConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RDMAHostConfig `json:"items"`
}

// Condition types of an RDMAHostState.
const (
	// ConditionInSync: the node matches its config's spec (plan empty,
	// nothing pending).
	ConditionInSync = "InSync"
	// ConditionProgressing: the agent is applying or activating.
	ConditionProgressing = "Progressing"
	// ConditionActivationRequired: staged firmware values wait for a
	// firmware reset or reboot (and, with an activation policy, a slot).
	ConditionActivationRequired = "ActivationRequired"
	// ConditionActivationFailed: an activation did not take; the node keeps
	// its slot and no other node of the config takes one until a person
	// acts (docs/guides/kubernetes.md).
	ConditionActivationFailed = "ActivationFailed"
	// ConditionDegraded: the agent could not plan or apply (a bad spec, a
	// failed change, a host that cannot be read, a program the spec needs
	// missing: reason ToolMissing).
	ConditionDegraded = "Degraded"
	// ConditionConfigConflict: more than one config selects the node;
	// nothing is applied.
	ConditionConfigConflict = "ConfigConflict"
)

// PlanSummary counts a plan's changes.
type PlanSummary struct {
	Add    int `json:"add"`
	Change int `json:"change"`
	Remove int `json:"remove"`
}

// PendingItem is a staged value that is not current yet.
type PendingItem struct {
	// Resource is the plan's address, e.g. firmware[0000:3b:00.0].
	Resource string `json:"resource"`
	// Attribute is the value's name, e.g. LINK_TYPE_P1.
	// +optional
	Attribute string `json:"attribute,omitempty"`
	// Value is the staged value.
	// +optional
	Value string `json:"value,omitempty"`
	// Activation is what makes it current: fw-reset, reboot,
	// power-cycle or driver-reload (a GPU driver parameter).
	// +optional
	Activation string `json:"activation,omitempty"`
}

// ApplyResult is what the agent's last apply or activation did.
type ApplyResult struct {
	// Action: apply or activate.
	Action string `json:"action"`
	// Time the action ended.
	Time metav1.Time `json:"time"`
	// ExitCode as rdmaform's (0 done, 1 error, 3 activation still needed).
	ExitCode int `json:"exitCode"`
	// Applied counts the changes made.
	// +optional
	Applied int `json:"applied,omitempty"`
	// Message says what failed, or what was done.
	// +optional
	Message string `json:"message,omitempty"`
}

// RDMAHostStateStatus is what a node's agent found and did.
type RDMAHostStateStatus struct {
	// Config is the RDMAHostConfig that selects the node ("" when none
	// does, or when several do: ConfigConflict).
	// +optional
	Config string `json:"config,omitempty"`
	// Conditions: InSync, Progressing, ActivationRequired,
	// ActivationFailed, Degraded, ConfigConflict; observedGeneration is
	// the config's generation the condition is about.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Plan counts what the last plan would add, change and remove.
	// +optional
	Plan PlanSummary `json:"plan"`
	// Pending lists staged values with how each becomes current.
	// +optional
	Pending []PendingItem `json:"pending,omitempty"`
	// Drift lists the resources the last plan would change (plan
	// addresses), at most 100.
	// +optional
	Drift []string `json:"drift,omitempty"`
	// LastPlanTime is when the plan this status reports was made. The
	// agent writes the state only when what it says changes, so on a
	// steady node this is the last change, not the last plan (the agent's
	// rdmaform_agent_last_reconcile_timestamp_seconds is that).
	// +optional
	LastPlanTime *metav1.Time `json:"lastPlanTime,omitempty"`
	// LastApply is the last apply's or activation's result.
	// +optional
	LastApply *ApplyResult `json:"lastApply,omitempty"`
	// Gates are the last run of the policy's gate probes: what each
	// measured, against what floor or ceiling.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Gates []GateResult `json:"gates,omitempty"`
	// Maintenance is the node's NodeMaintenance (namespace/name) while
	// the maintenance operator holds it out of service for rdmaform.
	// +optional
	Maintenance string `json:"maintenance,omitempty"`
}

// GateResult is one gate probe's outcome.
type GateResult struct {
	// Name is the probe's name in the hostSpec; Kind its kind
	// (bandwidth, latency, ping, ...); Target its peer.
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"`
	// Outcome: passed, failed or error (the probe could not run).
	Outcome string `json:"outcome"`
	// Reason: what it measured against what, as rdmaform probe says it.
	// +optional
	Reason string `json:"reason,omitempty"`
	// BandwidthGbps is the gated figure (one direction, the lower when
	// bidirectional), FloorGbps its floor; LatencyUs the median latency,
	// CeilingUs its ceiling. Written as decimal strings ("193.3").
	// +optional
	BandwidthGbps string `json:"bandwidthGbps,omitempty"`
	// +optional
	FloorGbps string `json:"floorGbps,omitempty"`
	// +optional
	LatencyUs string `json:"latencyUs,omitempty"`
	// +optional
	CeilingUs string `json:"ceilingUs,omitempty"`
	// Time the probe ended.
	Time metav1.Time `json:"time"`
}

// RDMAHostState is one node's rdmaform state, named after the node and
// written only by the agent on that node.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=rhs
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=`.status.config`
// +kubebuilder:printcolumn:name="InSync",type=string,JSONPath=`.status.conditions[?(@.type=="InSync")].status`
// +kubebuilder:printcolumn:name="Add",type=integer,JSONPath=`.status.plan.add`
// +kubebuilder:printcolumn:name="Change",type=integer,JSONPath=`.status.plan.change`
// +kubebuilder:printcolumn:name="Remove",type=integer,JSONPath=`.status.plan.remove`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RDMAHostState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Status RDMAHostStateStatus `json:"status,omitempty"`
}

// RDMAHostStateList is a list of RDMAHostState.
//
// +kubebuilder:object:root=true
type RDMAHostStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RDMAHostState `json:"items"`
}
