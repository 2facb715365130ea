"""The main job (OneFlow's MakeMainJob): WaitAndSendIds -> ReentrantLock -> Case -> one Tick per critical
section -> Esac -> CallbackNotify, made for the compiled jobs and linked into the Plan in place of each job's
source tick (plan_builder.link_main)."""

from __future__ import annotations

from ..ir import Job
from .system_jobs import SystemJobBuilder

WAIT_BUFFER = "GlobalWaitJobId"
CALLBACK_BUFFER = "CallbackNotifier"
MAIN_JOB = "System-Main"


def make_main_job(jobs: list[Job]) -> Job:
    interfaces = [set(job.interface_op_names) for job in jobs]
    intersecting = tuple(
        tuple(j for j in range(len(jobs)) if j != i and interfaces[i] & interfaces[j]) for i in range(len(jobs))
    )
    b = SystemJobBuilder(MAIN_JOB, "main")
    wait = b.add("wait_and_send_ids", "System-Main-WaitAndSendIds_0",
                 attrs={"wait_buffer_name": WAIT_BUFFER, "id_list": tuple((i,) for i in range(len(jobs)))})
    lock = b.add("reentrant_lock", "System-Main-ReentrantLock_0", {"start": (wait,)},
                 {"lock_id2intersecting_lock_ids": intersecting})
    b.add("case", "System-Main-Case_0", {"in": (lock,)}, {"num_branches": len(jobs)})
    for i, lbn in enumerate(b.ops[-1].outputs["out"]):
        b.add("tick", f"System-Main-Tick_CriticalSection_{i}", {"in": (lbn,)}, {"critical_section_id": i})
    esac = b.add("esac", "System-Main-Esac_0")
    b.add("callback_notify", "System-Main-CallbackNotify_0", {"in": (esac,)}, {"callback_buffer_name": CALLBACK_BUFFER})
    return b.build()
