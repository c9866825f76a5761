# Warren's per-host daemons as a Nomad system job (docs/MULTIHOST.md): one allocation on every
# client node, as E2B runs its orchestrator. raw_exec runs the node's own installation
# (scripts/setup.sh) through scripts/warren-launch with its users and lock-downs; clusterd joins
# the etcd cluster named below. etcd runs outside this job (three members or more).
# Validate offline: nomad job validate deploy/nomad/warren.nomad.hcl
job "warren" {
  type        = "system"
  datacenters = ["*"]

  update {
    max_parallel = 1
    stagger      = "30s"
  }

  group "warren" {
    network {
      port "gateway" {
        static = 8300
      }
      port "clusterd" {
        static = 8303
      }
    }

    service {
      name     = "warren-clusterd"
      port     = "clusterd"
      provider = "nomad"
      check {
        type     = "http"
        path     = "/v1/health"
        interval = "5s"
        timeout  = "2s"
      }
    }

    task "warren" {
      driver = "raw_exec"

      config {
        command = "/usr/local/bin/warren-launch"
        args    = ["run"]
      }

      env {
        WARREN_CLUSTERD_OPTS = "--etcd 10.0.0.11:2379,10.0.0.12:2379,10.0.0.13:2379 --lease-ttl 10 --name ${node.unique.name} --listen ${attr.unique.network.ip-address}:8303 --gateway-url http://${attr.unique.network.ip-address}:8300"
      }

      # the shared cluster key, from Nomad variables: nomad var put nomad/jobs/warren key=...
      template {
        destination = "/etc/warren/cluster-key"
        perms       = "0640"
        gid         = 0
        data        = "{{ with nomadVar \"nomad/jobs/warren\" }}{{ .key }}{{ end }}"
      }

      # a node's sandboxes outlive a restart of the task: netnsd and the supervisor adopt them
      kill_timeout = "60s"

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}
