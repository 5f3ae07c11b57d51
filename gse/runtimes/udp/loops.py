"""Event loops of the UDP runtimes: which one, and one run on a fresh one.

``loop_factory("auto")`` takes uvloop when it is installed, else asyncio's default loop;
``run_async`` runs one coroutine on a fresh loop and always cancels what is left and
closes the loop, so a run leaves no task behind even when interrupted.  (Re-exported by
``gse.runtimes.udp.io``, where they were first.)
"""

import asyncio
import importlib.util
import signal
import threading

LOOPS = ("auto", "asyncio", "uvloop")

__all__ = ["LOOPS", "uvloop_available", "loop_factory", "run_async", "loop_name"]


def uvloop_available():
    return importlib.util.find_spec("uvloop") is not None


def loop_factory(name="auto"):
    """(factory, resolved name) for ``name`` in ``LOOPS``."""
    if name not in LOOPS:
        raise ValueError("unknown event loop %r (known: %s)" % (name, ", ".join(LOOPS)))
    if name == "auto":
        name = "uvloop" if uvloop_available() else "asyncio"
    if name == "uvloop":
        try:
            import uvloop
        except ImportError:
            raise ValueError("event loop 'uvloop' asked for but uvloop is not installed "
                             "(pip install uvloop, or --loop asyncio)") from None
        return uvloop.new_event_loop, "uvloop"
    return asyncio.new_event_loop, "asyncio"


def run_async(main, loop="auto"):
    """Run ``main()`` (a coroutine function) on a fresh loop of kind ``loop``.

    Ctrl-C (SIGINT, when this is the main thread and nobody else handles it) cancels the
    main task, so its ``finally`` blocks run inside the loop, and then raises
    KeyboardInterrupt -- as ``asyncio.run`` does.  Whatever happens, every task still
    pending is cancelled and awaited, async generators are shut down and the loop closed.
    """
    factory, _ = loop_factory(loop)
    lp = factory()
    interrupted = []
    sigint = False
    try:
        task = lp.create_task(main())
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            def on_sigint():
                interrupted.append(True)
                task.cancel()
            try:
                lp.add_signal_handler(signal.SIGINT, on_sigint)
                sigint = True
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        try:
            return lp.run_until_complete(task)
        except asyncio.CancelledError:
            if interrupted:
                raise KeyboardInterrupt() from None
            raise
    finally:
        try:
            if sigint:
                lp.remove_signal_handler(signal.SIGINT)
            pending = [t for t in asyncio.all_tasks(lp) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                lp.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            lp.run_until_complete(lp.shutdown_asyncgens())
        finally:
            lp.close()


def loop_name(loop):
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
