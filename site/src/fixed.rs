//! [`fixed`]: views with their type erased, replaced (not patched) when rendered again.
//!
//! Size, not speed. tachys compiles its view code once per view *type*: `build`, and a
//! `rebuild` (patch the DOM in place) for every element type of every view that a reactive
//! closure, a list or an `AnyView` may render again — nearly the whole site, recursively — and
//! the list, option and `AnyView` code once per item type. Every `view!` here goes through
//! [`fixed`] instead: the view becomes an [`Erased`] (a boxed `build`), so lists, options and
//! branches all hold one type, and rendering one again builds the new view, puts it where the
//! old one was and unmounts the old one (what `AnyView` does when the type changes). Only
//! `build` is compiled for what is inside. The views are small, so building them again costs
//! nothing one could notice; reactive text inside them still updates in place. The exception is
//! a list that grows one item at a time up to a thousand (the probe's requests and failures):
//! its items stay plain views, patched in place.

use leptos::tachys::html::attribute::Attribute;
use leptos::tachys::html::attribute::any_attribute::AnyAttribute;
use leptos::tachys::hydration::Cursor;
use leptos::tachys::view::add_attr::AddAnyAttr;
use leptos::tachys::view::{Mountable, Position, PositionState, Render, RenderHtml};

/// `view`, type-erased: see the module docs.
pub fn fixed<V>(view: V) -> Erased
where
    V: Render + Send + 'static,
    V::State: 'static,
{
    view.erase()
}

/// A view with its type erased, replaced (never patched) when rendered again: `into_any` with
/// less code per erased type (one boxed `build`, the state's own `Mountable` methods, none of
/// `AnyView`'s wrappers). Made by [`fixed`] or [`Erase::erase`].
pub struct Erased(Box<dyn FnOnce() -> ErasedState + Send>);

/// The DOM state of an [`Erased`] view.
pub struct ErasedState(Box<dyn Mountable>);

/// `.erase()` on any view; see [`Erased`].
pub trait Erase {
    /// This view, type-erased.
    fn erase(self) -> Erased;
}

impl<V> Erase for V
where
    V: Render + Send + 'static,
    V::State: 'static,
{
    fn erase(self) -> Erased {
        Erased(Box::new(move || ErasedState(Box::new(self.build()))))
    }
}

impl Mountable for ErasedState {
    fn unmount(&mut self) {
        self.0.unmount();
    }

    fn mount(
        &mut self,
        parent: &leptos::tachys::renderer::types::Element,
        marker: Option<&leptos::tachys::renderer::types::Node>,
    ) {
        self.0.mount(parent, marker);
    }

    fn insert_before_this(&self, child: &mut dyn Mountable) -> bool {
        self.0.insert_before_this(child)
    }

    fn elements(&self) -> Vec<leptos::tachys::renderer::types::Element> {
        self.0.elements()
    }
}

impl Render for Erased {
    type State = ErasedState;

    fn build(self) -> Self::State {
        (self.0)()
    }

    fn rebuild(self, state: &mut Self::State) {
        let mut new = self.build();
        state.insert_before_this(&mut new);
        state.unmount();
        *state = new;
    }
}

impl AddAnyAttr for Erased {
    type Output<SomeNewAttr: Attribute> = Erased;

    /// Nothing here spreads attributes onto a component; they are dropped.
    fn add_any_attr<NewAttr: Attribute>(self, _attr: NewAttr) -> Self::Output<NewAttr> {
        self
    }
}

impl RenderHtml for Erased {
    type AsyncOutput = Self;
    type Owned = Self;

    const MIN_LENGTH: usize = 0;

    fn dry_resolve(&mut self) {}

    async fn resolve(self) -> Self::AsyncOutput {
        self
    }

    /// The site renders in the browser only (no server rendering): nothing to write.
    fn to_html_with_buf(
        self,
        _buf: &mut String,
        _position: &mut Position,
        _escape: bool,
        _mark_branches: bool,
        _extra_attrs: Vec<AnyAttribute>,
    ) {
    }

    /// No hydration either: a fresh build.
    fn hydrate<const FROM_SERVER: bool>(self, _cursor: &Cursor, _position: &PositionState) -> Self::State {
        self.build()
    }

    fn into_owned(self) -> Self::Owned {
        self
    }
}
