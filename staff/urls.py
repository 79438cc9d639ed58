from __future__ import annotations

from django.urls import path

from staff.views import EraseUserView, RestoreUserView

urlpatterns = [
    path("users/<int:user_id>/restore", RestoreUserView.as_view(), name="admin-user-restore"),
    path("users/<int:user_id>/permanent", EraseUserView.as_view(), name="admin-user-permanent"),
]
