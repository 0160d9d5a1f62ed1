"""Request and response bodies shared by routes, and the views that fill them."""
