//! The loop itself: tasks, their wakers, the park on mio's poll, and the
//! thread's timers and socket readiness (see the module above for why).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Token};
use tokio::sync::oneshot;

/// mio's waker: a wake-up from another thread.
const WAKER: Token = Token(usize::MAX);
/// The main future's id among the tasks.
const MAIN: usize = usize::MAX;
/// Socket operations a task may complete in one poll before it yields
/// (tokio's budget is the same).
const BUDGET: u32 = 128;
/// Tasks polled between two looks at the sockets while tasks stay ready
/// (tokio's `event_interval` is the same).
const TASKS_PER_LOOK: u32 = 61;
/// Events taken from one `epoll_wait`.
const EVENTS: usize = 1024;

static NEXT_LOOP: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static CORE: RefCell<Option<Rc<Core>>> = const { RefCell::new(None) };
}

/// Runs `f` with the thread's loop, if it runs on one.
pub(super) fn with_core<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    CORE.with(|c| c.borrow().as_deref().map(f))
}

/// Runs `f` with the thread's loop or, off one, with None.
fn on_core<R>(f: impl FnOnce(Option<&Core>) -> R) -> R {
    CORE.with(|c| f(c.borrow().as_deref()))
}

/// Whether the calling thread runs a [`LocalLoop`] (rather than a tokio
/// runtime, or nothing).
pub fn on_loop() -> bool {
    with_core(|_| ()).is_some()
}

type Task = Pin<Box<dyn Future<Output = ()>>>;

struct Slot {
    /// None while it is being polled.
    fut: Option<Task>,
    header: Arc<Header>,
}

/// What a task's waker holds.
pub(super) struct Header {
    id: usize,
    loop_id: u64,
    queued: AtomicBool,
    aborted: AtomicBool,
    remote: Arc<Remote>,
}

/// The way into the loop from other threads.
struct Remote {
    queue: Mutex<Vec<usize>>,
    any: AtomicBool,
    sleeping: AtomicBool,
    waker: mio::Waker,
}

impl Remote {
    fn push(&self, id: usize) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(id);
        // Either the loop sees `any` before it blocks, or this sees it
        // asleep and wakes it (both sequentially consistent).
        self.any.store(true, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            let _ = self.waker.wake();
        }
    }
}

impl Wake for Header {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let here = with_core(|core| {
            if core.id == self.loop_id {
                core.queue(self.id);
                true
            } else {
                false
            }
        });
        if here != Some(true) {
            self.remote.push(self.id);
        }
    }
}

/// A socket's readiness as the last events and operations left it. An
/// end (the peer's close, a reset, an error) is never cleared, as tokio
/// never clears it: edge-triggered, it is reported once, often in the same
/// event as the last data, and a read that then waited for another event
/// would wait for ever.
pub(super) struct Source {
    pub(super) readable: bool,
    pub(super) writable: bool,
    pub(super) read_closed: bool,
    pub(super) write_closed: bool,
    pub(super) read_waker: Option<Waker>,
    pub(super) write_waker: Option<Waker>,
}

/// The loop's state, reached through the thread-local while it runs.
pub(super) struct Core {
    id: u64,
    local: RefCell<VecDeque<usize>>,
    main_woken: Cell<bool>,
    remote: Arc<Remote>,
    tasks: RefCell<Vec<Option<Slot>>>,
    free_tasks: RefCell<Vec<usize>>,
    pub(super) sources: RefCell<Vec<Option<Source>>>,
    free_sources: RefCell<Vec<usize>>,
    registry: mio::Registry,
    timers: RefCell<BTreeMap<(Instant, u64), Waker>>,
    timer_seq: Cell<u64>,
    due: RefCell<Vec<Waker>>,
    budget: Cell<u32>,
}

impl Core {
    pub(super) fn id(&self) -> u64 {
        self.id
    }

    fn queue(&self, id: usize) {
        if id == MAIN {
            self.main_woken.set(true);
        } else {
            self.local.borrow_mut().push_back(id);
        }
    }

    fn insert(&self, fut: Task) -> Arc<Header> {
        let popped = self.free_tasks.borrow_mut().pop();
        let id = popped.unwrap_or_else(|| {
            let mut tasks = self.tasks.borrow_mut();
            tasks.push(None);
            tasks.len() - 1
        });
        let header = Arc::new(Header {
            id,
            loop_id: self.id,
            queued: AtomicBool::new(true),
            aborted: AtomicBool::new(false),
            remote: self.remote.clone(),
        });
        self.tasks.borrow_mut()[id] = Some(Slot {
            fut: Some(fut),
            header: header.clone(),
        });
        self.local.borrow_mut().push_back(id);
        header
    }

    fn remove(&self, id: usize) -> Option<Slot> {
        let slot = self.tasks.borrow_mut().get_mut(id)?.take();
        if slot.is_some() {
            self.free_tasks.borrow_mut().push(id);
        }
        slot
    }

    fn run_task(&self, id: usize) {
        let taken = {
            let mut tasks = self.tasks.borrow_mut();
            match tasks.get_mut(id) {
                Some(Some(slot)) => slot.fut.take().map(|f| (f, slot.header.clone())),
                _ => None,
            }
        };
        // A stale wake-up (of a task since ended, its slot reused or not).
        let Some((mut fut, header)) = taken else {
            return;
        };
        // A read-modify-write, not a store: a waker that saw the task
        // still queued (its swap read true) must be ordered before this,
        // so that the poll below sees what it woke the task for. A plain
        // store could sit in the store buffer while the poll reads, and the
        // wake-up be lost.
        header.queued.swap(false, Ordering::AcqRel);
        let ended = header.aborted.load(Ordering::Acquire) || {
            self.budget.set(BUDGET);
            let waker = Waker::from(header);
            fut.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_ready()
        };
        if ended {
            // Dropped outside every borrow: its drop may close sockets.
            let slot = self.remove(id);
            drop(fut);
            drop(slot);
        } else if let Some(Some(slot)) = self.tasks.borrow_mut().get_mut(id) {
            slot.fut = Some(fut);
        }
    }

    /// Whether the running task may still complete a socket operation in
    /// this poll (if not, the caller yields).
    pub(super) fn has_budget(&self) -> bool {
        self.budget.get() > 0
    }

    /// A socket operation completed: one less in the budget (one that
    /// waits costs none, as in tokio).
    pub(super) fn spend(&self) {
        self.budget.set(self.budget.get().saturating_sub(1));
    }

    /// Registers a socket for both directions, edge-triggered; its index.
    pub(super) fn register(&self, s: &mut impl mio::event::Source) -> io::Result<usize> {
        let popped = self.free_sources.borrow_mut().pop();
        let idx = popped.unwrap_or_else(|| {
            let mut sources = self.sources.borrow_mut();
            sources.push(None);
            sources.len() - 1
        });
        if let Err(e) =
            self.registry
                .register(s, Token(idx), Interest::READABLE | Interest::WRITABLE)
        {
            self.free_sources.borrow_mut().push(idx);
            return Err(e);
        }
        // Ready until an operation says otherwise: the first one tries.
        self.sources.borrow_mut()[idx] = Some(Source {
            readable: true,
            writable: true,
            read_closed: false,
            write_closed: false,
            read_waker: None,
            write_waker: None,
        });
        Ok(idx)
    }

    pub(super) fn deregister(&self, idx: usize, s: &mut impl mio::event::Source) {
        let _ = self.registry.deregister(s);
        let old = self
            .sources
            .borrow_mut()
            .get_mut(idx)
            .and_then(Option::take);
        if old.is_some() {
            self.free_sources.borrow_mut().push(idx);
        }
        drop(old);
    }

    fn ready(&self, idx: usize, ev: &mio::event::Event) {
        let read_closed = ev.is_read_closed() || ev.is_error();
        let write_closed = ev.is_write_closed() || ev.is_error();
        let readable = ev.is_readable() || read_closed;
        let writable = ev.is_writable() || write_closed;
        let (r, w) = {
            let mut sources = self.sources.borrow_mut();
            let Some(Some(s)) = sources.get_mut(idx) else {
                return;
            };
            s.readable |= readable;
            s.writable |= writable;
            s.read_closed |= read_closed;
            s.write_closed |= write_closed;
            (
                if readable { s.read_waker.take() } else { None },
                if writable { s.write_waker.take() } else { None },
            )
        };
        if let Some(w) = r {
            w.wake();
        }
        if let Some(w) = w {
            w.wake();
        }
    }

    pub(super) fn add_timer(&self, at: Instant, waker: Waker) -> u64 {
        let seq = self.timer_seq.get() + 1;
        self.timer_seq.set(seq);
        self.timers.borrow_mut().insert((at, seq), waker);
        seq
    }

    /// Gives a pending timer the waker of its latest poll; false when it
    /// has fired (and so is gone).
    pub(super) fn update_timer(&self, at: Instant, seq: u64, waker: &Waker) -> bool {
        match self.timers.borrow_mut().get_mut(&(at, seq)) {
            Some(w) => {
                if !w.will_wake(waker) {
                    *w = waker.clone();
                }
                true
            }
            None => false,
        }
    }

    pub(super) fn remove_timer(&self, at: Instant, seq: u64) {
        let old = self.timers.borrow_mut().remove(&(at, seq));
        drop(old);
    }

    /// How long the park may last: until the first timer, or for ever.
    /// Reads the clock only when a timer is pending.
    fn park_limit(&self) -> Option<Duration> {
        let first = self.timers.borrow().keys().next().map(|(at, _)| *at)?;
        Some(first.saturating_duration_since(Instant::now()))
    }

    fn fire_timers(&self) {
        if self.timers.borrow().is_empty() {
            return;
        }
        let now = Instant::now();
        let mut due = self.due.borrow_mut();
        {
            let mut timers = self.timers.borrow_mut();
            while let Some(entry) = timers.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                due.push(entry.remove());
            }
        }
        for w in due.drain(..) {
            w.wake();
        }
    }

    fn take_remote(&self) {
        if !self.remote.any.swap(false, Ordering::SeqCst) {
            return;
        }
        let ids = std::mem::take(
            &mut *self
                .remote
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for id in ids {
            self.queue(id);
        }
    }
}

/// Sets the thread's loop while it lives.
struct Enter(Option<Rc<Core>>);

impl Enter {
    fn new(core: Rc<Core>) -> Enter {
        Enter(CORE.with(|c| c.borrow_mut().replace(core)))
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        let before = self.0.take();
        let ours = CORE.with(|c| std::mem::replace(&mut *c.borrow_mut(), before));
        drop(ours);
    }
}

/// One thread's poll loop. Its tasks end with it.
pub struct LocalLoop {
    poll: mio::Poll,
    events: Events,
    core: Rc<Core>,
}

impl LocalLoop {
    pub fn new() -> io::Result<LocalLoop> {
        let poll = mio::Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = mio::Waker::new(poll.registry(), WAKER)?;
        let core = Rc::new(Core {
            id: NEXT_LOOP.fetch_add(1, Ordering::Relaxed),
            local: RefCell::new(VecDeque::new()),
            main_woken: Cell::new(false),
            remote: Arc::new(Remote {
                queue: Mutex::new(Vec::new()),
                any: AtomicBool::new(false),
                sleeping: AtomicBool::new(false),
                waker,
            }),
            tasks: RefCell::new(Vec::new()),
            free_tasks: RefCell::new(Vec::new()),
            sources: RefCell::new(Vec::new()),
            free_sources: RefCell::new(Vec::new()),
            registry,
            timers: RefCell::new(BTreeMap::new()),
            timer_seq: Cell::new(0),
            due: RefCell::new(Vec::new()),
            budget: Cell::new(BUDGET),
        });
        Ok(LocalLoop {
            poll,
            events: Events::with_capacity(EVENTS),
            core,
        })
    }

    /// Runs `main` and the tasks it spawns until `main` ends; spawned tasks
    /// not ended by then stay, and end when the loop is dropped.
    pub fn block_on<F: Future>(&mut self, main: F) -> F::Output {
        let _enter = Enter::new(self.core.clone());
        let mut main = std::pin::pin!(main);
        let header = Arc::new(Header {
            id: MAIN,
            loop_id: self.core.id,
            queued: AtomicBool::new(true),
            aborted: AtomicBool::new(false),
            remote: self.core.remote.clone(),
        });
        let waker = Waker::from(header.clone());
        self.core.main_woken.set(true);
        loop {
            if self.core.main_woken.replace(false) {
                header.queued.swap(false, Ordering::AcqRel);
                self.core.budget.set(BUDGET);
                if let Poll::Ready(out) = main.as_mut().poll(&mut Context::from_waker(&waker)) {
                    return out;
                }
            }
            let mut ran = 0;
            while ran < TASKS_PER_LOOK {
                let next = self.core.local.borrow_mut().pop_front();
                let Some(id) = next else { break };
                self.core.run_task(id);
                ran += 1;
            }
            let idle = !self.core.main_woken.get() && self.core.local.borrow().is_empty();
            self.turn(idle);
        }
    }

    /// One look at the sockets, the timers and the other threads' wake-ups;
    /// blocking until one of them has something when `block`.
    fn turn(&mut self, block: bool) {
        let core = &self.core;
        let mut limit = if block {
            core.park_limit()
        } else {
            Some(Duration::ZERO)
        };
        if block {
            core.remote.sleeping.store(true, Ordering::SeqCst);
            if core.remote.any.load(Ordering::SeqCst) {
                limit = Some(Duration::ZERO);
            }
        }
        let polled = self.poll.poll(&mut self.events, limit);
        if block {
            core.remote.sleeping.store(false, Ordering::SeqCst);
        }
        if let Err(e) = polled
            && e.kind() != io::ErrorKind::Interrupted
        {
            // Not seen in practice (epoll_wait fails only on a bad
            // descriptor or buffer); a pause rather than a hot spin.
            std::thread::sleep(Duration::from_millis(1));
        }
        for ev in self.events.iter() {
            if ev.token() == WAKER {
                continue;
            }
            core.ready(ev.token().0, ev);
        }
        core.fire_timers();
        core.take_remote();
    }
}

impl Drop for LocalLoop {
    fn drop(&mut self) {
        // The tasks' drops may close sockets, which look for the loop.
        let _enter = Enter::new(self.core.clone());
        // A task's drop may spawn another (rare): dropped in turn, a few
        // rounds at most.
        for _ in 0..8 {
            let tasks = std::mem::take(&mut *self.core.tasks.borrow_mut());
            self.core.free_tasks.borrow_mut().clear();
            if tasks.is_empty() {
                break;
            }
            drop(tasks);
        }
        let timers = std::mem::take(&mut *self.core.timers.borrow_mut());
        drop(timers);
    }
}

/// Why a task gave no output.
#[derive(Debug)]
pub enum JoinError {
    /// It was aborted, or its loop ended first.
    Cancelled,
    /// It panicked; the panic's message.
    Panic(String),
}

impl JoinError {
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JoinError::Cancelled)
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Cancelled => f.write_str("task was cancelled"),
            JoinError::Panic(m) => write!(f, "task panicked: {m}"),
        }
    }
}

impl std::error::Error for JoinError {}

/// A spawned task's output, when it comes.
pub struct JoinHandle<T>(Join<T>);

enum Join<T> {
    Tokio(tokio::task::JoinHandle<T>),
    Own {
        rx: oneshot::Receiver<Result<T, String>>,
        header: Arc<Header>,
    },
}

impl<T> JoinHandle<T> {
    pub fn abort_handle(&self) -> AbortHandle {
        match &self.0 {
            Join::Tokio(h) => AbortHandle(Abort::Tokio(h.abort_handle())),
            Join::Own { header, .. } => AbortHandle(Abort::Own(header.clone())),
        }
    }

    pub fn abort(&self) {
        self.abort_handle().abort();
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            Join::Tokio(h) => Pin::new(h).poll(cx).map(|r| {
                r.map_err(|e| {
                    if e.is_cancelled() {
                        JoinError::Cancelled
                    } else {
                        JoinError::Panic(e.to_string())
                    }
                })
            }),
            Join::Own { rx, .. } => Pin::new(rx).poll(cx).map(|r| match r {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(m)) => Err(JoinError::Panic(m)),
                Err(_) => Err(JoinError::Cancelled),
            }),
        }
    }
}

/// A way to drop a task's future at its next turn, from any thread.
#[derive(Clone)]
pub struct AbortHandle(Abort);

#[derive(Clone)]
enum Abort {
    Tokio(tokio::task::AbortHandle),
    Own(Arc<Header>),
}

impl AbortHandle {
    pub fn abort(&self) {
        match &self.0 {
            Abort::Tokio(h) => h.abort(),
            Abort::Own(header) => {
                header.aborted.store(true, Ordering::Release);
                Wake::wake_by_ref(header);
            }
        }
    }
}

/// Runs `fut` as a task of the thread's loop or, off one, of the current
/// tokio runtime. A panic in it is its [`JoinError`], not the thread's.
pub fn spawn<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    on_core(move |core| match core {
        Some(core) => {
            let (tx, rx) = oneshot::channel();
            let header = core.insert(Box::pin(Catch {
                fut: Box::pin(fut),
                tx: Some(tx),
            }));
            JoinHandle(Join::Own { rx, header })
        }
        None => JoinHandle(Join::Tokio(tokio::spawn(fut))),
    })
}

/// A task's future, its panic caught and its output sent.
struct Catch<F: Future> {
    fut: Pin<Box<F>>,
    tx: Option<oneshot::Sender<Result<F::Output, String>>>,
}

impl<F: Future> Future for Catch<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let out = match catch_unwind(AssertUnwindSafe(|| this.fut.as_mut().poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(v)) => Ok(v),
            Err(p) => Err(p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string())),
        };
        if let Some(tx) = this.tx.take() {
            let _ = tx.send(out);
        }
        Poll::Ready(())
    }
}
