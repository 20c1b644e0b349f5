# trainscope measure's start-up hook (docs/measure.md#the-python-hook). trainscope writes this file
# as sitecustomize.py into <run>/hook/ and puts that folder first on the program's PYTHONPATH.
# It reports the end of every optimizer step over the pipe whose fd is TRAINSCOPE_STEP_FD:
# "step <time.monotonic_ns()> <items or -1>\n". It never imports torch itself: it waits for the
# program to import torch.optim.optimizer, then registers the global optimizer-step post hook
# (PyTorch >= 2.0) or, on older PyTorch (1.13 has none), wraps each Optimizer class's step().
# With TRAINSCOPE_PROFILE_STEPS="A-B" it runs torch.profiler for the program's steps A..B (1-based,
# counted as reported): started when step A-1 ends, a ProfilerStep#N mark per step, stopped when
# step B ends; tensorboard_trace_handler writes the trace into TRAINSCOPE_PROFILE_DIR.
# It removes itself from PYTHONPATH, so interpreters the program starts do not report steps, and
# then runs the sitecustomize it shadows, if any.
import os
import sys


def _trainscope_hook():
    hook_dir = os.environ.pop("TRAINSCOPE_HOOK_DIR", "")
    fd_text = os.environ.pop("TRAINSCOPE_STEP_FD", "")
    profile = (os.environ.pop("TRAINSCOPE_PROFILE_STEPS", ""), os.environ.pop("TRAINSCOPE_PROFILE_DIR", ""))
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != hook_dir]
    if rest:
        os.environ["PYTHONPATH"] = os.pathsep.join(rest)
    else:
        os.environ.pop("PYTHONPATH", None)
    try:
        fd = int(fd_text)
        os.fstat(fd)
    except (ValueError, OSError):
        return None
    return fd, profile


class _TrainscopeProfiler:
    """torch.profiler over steps first..last (docs/measure.md#a-profiled-window)."""

    def __init__(self, spec, out_dir):
        first, _, last = spec.partition("-")
        self.first, self.last, self.out_dir = int(first), int(last or first), out_dir
        self.prof = None

    def after_step(self, n):
        try:
            if n == self.first - 1:
                self.start()
            elif self.prof is not None and n < self.last:
                self.prof.step()
            elif self.prof is not None and n == self.last:
                self.prof.stop()
                self.prof = None
        except Exception as e:  # never break the program
            sys.stderr.write("trainscope: profiler window failed at step %d: %r\n" % (n, e))
            self.prof = None

    def start(self):
        import warnings

        import torch
        from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        handler = tensorboard_trace_handler(self.out_dir, worker_name="measure")
        # a schedule makes the profiler mark ProfilerStep#N; one step longer than the window, so
        # only stop() (after step `last`) saves the trace
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "won't be using warmup"
            window = schedule(wait=0, warmup=0, active=self.last - self.first + 2, repeat=1)
            self.prof = profile(activities=activities, schedule=window, on_trace_ready=handler)
            self.prof.start()


def _trainscope_install(fd, profile):
    import importlib.machinery
    import time

    owner = os.getpid()
    state = {"manual": False, "steps": 0}
    profiler = _TrainscopeProfiler(*profile) if profile[0] and profile[1] else None

    def report(items=None, manual=False):
        if os.getpid() != owner:  # a forked worker (DataLoader): not the program's step
            return
        if manual:
            state["manual"] = True
        elif state["manual"]:
            return
        try:
            os.write(fd, b"step %d %d\n" % (time.monotonic_ns(), -1 if items is None else int(items)))
        except OSError:
            pass
        state["steps"] += 1
        if profiler is not None:
            profiler.after_step(state["steps"])

    def patch(module):
        if hasattr(module, "register_optimizer_step_post_hook"):
            module.register_optimizer_step_post_hook(lambda opt, args, kwargs: report())
            return
        optimizer = module.Optimizer
        original_init = optimizer.__init__

        def __init__(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            cls = type(self)
            if cls.__dict__.get("_trainscope_wrapped"):
                return
            step = cls.step

            def wrapped(*a, **k):
                out = step(*a, **k)
                report()
                return out

            wrapped.__dict__.update(getattr(step, "__dict__", {}))  # keeps 1.13's "hooked" mark
            wrapped.__name__, wrapped.__doc__ = getattr(step, "__name__", "step"), step.__doc__
            cls.step = wrapped
            cls._trainscope_wrapped = True

        optimizer.__init__ = __init__

    class Finder:
        def find_spec(self, name, path, target=None):
            if name != "torch.optim.optimizer":
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            original = spec.loader.exec_module

            def exec_module(module):
                original(module)
                try:
                    patch(module)
                except Exception as e:  # never break the program
                    sys.stderr.write("trainscope: optimizer hook not installed: %r\n" % (e,))

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Finder())
    api = type(sys)("trainscope")
    api.step = lambda items=None: report(items, manual=True)
    api.step.__doc__ = "Marks the end of a step (items: samples or tokens in it); optimizer steps then no longer count."
    sys.modules.setdefault("trainscope", api)


def _trainscope_chain():
    # the sitecustomize this one shadows (Debian's, a virtual environment's)
    here = os.path.dirname(os.path.abspath(__file__))
    del sys.modules["sitecustomize"]
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        import sitecustomize  # noqa: F401
    except ImportError:
        pass
    finally:
        sys.path[:] = saved


_hooked = _trainscope_hook()
if _hooked is not None:
    _trainscope_install(*_hooked)
_trainscope_chain()
